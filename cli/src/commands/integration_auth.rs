//! How a new integration authenticates to its server: a bearer token, a
//! header carrying a secret, or OAuth (authorization code with PKCE, each
//! user connecting their own account unless it is organization-wide).

use clap::Args;
use switchboard_proto::mcp::v1::{self as mcp, auth_config::Method};

use crate::args::KeyValue;

/// The authentication flags of `integrations create` (at most one kind).
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// Authenticate with `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "TOKEN", conflicts_with_all = ["header", "oauth_redirect_uri"])]
    bearer_token: Option<String>,
    /// Authenticate with a header carrying a secret value.
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "oauth_redirect_uri")]
    header: Option<KeyValue>,
    /// Authenticate with OAuth: each user connects their own account and is
    /// sent back to this address with `code` and `state` (`chat` asks for it).
    /// An `https` URL (plain `http` only on a loopback address the service
    /// allows); the authorization URLs handed back are `https` too.
    #[arg(long, value_name = "URI")]
    oauth_redirect_uri: Option<String>,
    /// A pre-registered OAuth client id [default: registered by the service].
    #[arg(long, value_name = "ID", requires = "oauth_redirect_uri")]
    oauth_client_id: Option<String>,
    /// The pre-registered OAuth client's secret.
    #[arg(long, value_name = "SECRET", requires_all = ["oauth_client_id", "oauth_issuer"])]
    oauth_client_secret: Option<String>,
    /// The authorization server (its `https` issuer URL) the pre-registered
    /// client belongs to: the secret is sent to that server only.
    #[arg(long, value_name = "URL", requires = "oauth_client_id")]
    oauth_issuer: Option<String>,
    /// An OAuth scope to ask for (repeatable) [default: the server's].
    #[arg(long, value_name = "SCOPE", requires = "oauth_redirect_uri")]
    oauth_scope: Vec<String>,
    /// One OAuth connection for the whole organization, made by an admin.
    #[arg(long, requires = "oauth_redirect_uri")]
    oauth_organization_wide: bool,
}

impl AuthArgs {
    /// The chosen method; `None` when the server needs none.
    pub fn method(self) -> Option<Method> {
        if let Some(redirect_uri) = self.oauth_redirect_uri {
            return Some(Method::OauthAuthorizationCode(
                mcp::OAuthAuthorizationCodeAuth {
                    redirect_uri,
                    client_id: self.oauth_client_id.unwrap_or_default(),
                    client_secret: self.oauth_client_secret.unwrap_or_default(),
                    scopes: self.oauth_scope,
                    organization_wide: self.oauth_organization_wide,
                    issuer: self.oauth_issuer.unwrap_or_default(),
                    ..Default::default()
                },
            ));
        }
        match (self.bearer_token, self.header) {
            (Some(token), _) => Some(Method::BearerToken(mcp::BearerTokenAuth {
                token,
                token_set: false,
            })),
            (None, Some(header)) => Some(Method::Header(mcp::HeaderAuth {
                header_name: header.key,
                value: header.value,
                value_set: false,
            })),
            (None, None) => None,
        }
    }
}
