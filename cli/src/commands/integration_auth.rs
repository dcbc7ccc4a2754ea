//! How a new integration authenticates to its server: a bearer token, a
//! header or a query parameter carrying a secret, OAuth authorization code with PKCE (each user
//! connecting their own account unless it is organization-wide), or OAuth
//! client credentials (the service as itself: a client secret, a private
//! key, or its workload identity; or on behalf of each caller, their token
//! exchanged).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use switchboard_proto::mcp::v1::{self as mcp, auth_config::Method};

use crate::{args::KeyValue, error::CliError};

/// How the service proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ClientAuth {
    /// The client id and secret in HTTP Basic authentication.
    ClientSecretBasic,
    /// The client id and secret in the request body.
    ClientSecretPost,
    /// A JWT signed with the client's private key (`--private-key-file`).
    PrivateKeyJwt,
    /// The service's workload identity token (no client secret).
    WorkloadIdentity,
}

impl From<ClientAuth> for mcp::ClientAuthentication {
    fn from(method: ClientAuth) -> Self {
        match method {
            ClientAuth::ClientSecretBasic => Self::ClientSecretBasic,
            ClientAuth::ClientSecretPost => Self::ClientSecretPost,
            ClientAuth::PrivateKeyJwt => Self::PrivateKeyJwt,
            ClientAuth::WorkloadIdentity => Self::WorkloadIdentity,
        }
    }
}

/// Whose token an OAuth client-credentials integration asks for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OnBehalfOf {
    /// The caller's token exchanged for one scoped to the MCP server
    /// (OAuth 2.0 Token Exchange, RFC 8693).
    TokenExchange,
    /// The caller's ID token exchanged at the identity provider
    /// (`--idp-issuer`, `--idp-token-url`, `--idp-client-id`) for an
    /// identity assertion presented at the MCP server's authorization server.
    EnterpriseManaged,
}

impl From<OnBehalfOf> for mcp::OnBehalfOf {
    fn from(grant: OnBehalfOf) -> Self {
        match grant {
            OnBehalfOf::TokenExchange => Self::TokenExchange,
            OnBehalfOf::EnterpriseManaged => Self::EnterpriseManaged,
        }
    }
}

/// The flags of a token on behalf of the caller.
#[derive(Debug, Args)]
pub struct OnBehalfOfArgs {
    /// Act on behalf of each caller rather than as the service: their own
    /// token is exchanged, never sent to the MCP server.
    #[arg(long, value_name = "GRANT", requires = "client_credentials")]
    on_behalf_of: Option<OnBehalfOf>,
    /// The audience a token exchange asks for [default: the MCP server's URL].
    #[arg(long, value_name = "AUDIENCE", requires = "on_behalf_of")]
    token_audience: Option<String>,
    /// The identity provider's issuer URL (enterprise-managed).
    #[arg(long, value_name = "URL", requires = "on_behalf_of")]
    idp_issuer: Option<String>,
    /// The identity provider's token endpoint (enterprise-managed).
    #[arg(long, value_name = "URL", requires = "on_behalf_of")]
    idp_token_url: Option<String>,
    /// The client id registered with the identity provider (enterprise-managed).
    #[arg(long, value_name = "ID", requires = "on_behalf_of")]
    idp_client_id: Option<String>,
}

impl OnBehalfOfArgs {
    /// Sets the grant's fields of `auth`.
    fn apply(&self, auth: &mut mcp::OAuthClientCredentialsAuth) {
        let Some(grant) = self.on_behalf_of else {
            return;
        };
        auth.on_behalf_of = mcp::OnBehalfOf::from(grant).into();
        auth.audience = self.token_audience.clone().unwrap_or_default();
        if matches!(grant, OnBehalfOf::EnterpriseManaged) {
            auth.identity_provider = Some(mcp::IdentityProvider {
                issuer: self.idp_issuer.clone().unwrap_or_default(),
                token_url: self.idp_token_url.clone().unwrap_or_default(),
                client_id: self.idp_client_id.clone().unwrap_or_default(),
            });
        }
    }
}

/// The OAuth client credentials flags of `integrations create`.
#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("token_destination")
        .args(["token_url", "token_issuer"])
        .multiple(true)
))]
pub struct ClientCredentialsArgs {
    /// Authenticate as the service itself with OAuth client credentials,
    /// proving it this way at the token endpoint; needs `--token-url` or
    /// `--token-issuer` (a credential goes only to a pinned endpoint).
    #[arg(long, value_name = "METHOD", conflicts_with_all = ["bearer_token", "header", "oauth_redirect_uri"], requires = "token_destination")]
    client_credentials: Option<ClientAuth>,
    /// The token endpoint [default: named by the `--token-issuer`'s metadata].
    #[arg(long, value_name = "URL", requires = "client_credentials")]
    token_url: Option<String>,
    /// The OAuth client id (optional with workload-identity).
    #[arg(long, value_name = "ID", requires = "client_credentials")]
    client_id: Option<String>,
    /// The client secret (client-secret-basic, client-secret-post).
    #[arg(long, value_name = "SECRET", requires = "client_credentials")]
    client_secret: Option<String>,
    /// A PEM file holding the private key of private-key-jwt.
    #[arg(long, value_name = "FILE", requires = "client_credentials")]
    private_key_file: Option<PathBuf>,
    /// The private-key-jwt signing algorithm [default: ES256].
    #[arg(long, value_name = "ALG", requires = "private_key_file")]
    signing_algorithm: Option<String>,
    /// The authorization server (its issuer URL) whose own metadata names
    /// the token endpoint when `--token-url` is not given: credentials are
    /// sent to that server only.
    #[arg(long, value_name = "URL", requires = "client_credentials")]
    token_issuer: Option<String>,
    /// A scope to ask for with the token (repeatable).
    #[arg(long, value_name = "SCOPE", requires = "client_credentials")]
    token_scope: Vec<String>,
    /// On behalf of the caller.
    #[command(flatten)]
    on_behalf_of: OnBehalfOfArgs,
}

impl ClientCredentialsArgs {
    fn method(&self) -> Result<Option<Method>, CliError> {
        let Some(authentication) = self.client_credentials else {
            return Ok(None);
        };
        let private_key = match &self.private_key_file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?,
            None => String::new(),
        };
        let mut auth = mcp::OAuthClientCredentialsAuth {
            token_url: self.token_url.clone().unwrap_or_default(),
            client_id: self.client_id.clone().unwrap_or_default(),
            client_secret: self.client_secret.clone().unwrap_or_default(),
            scopes: self.token_scope.clone(),
            client_authentication: mcp::ClientAuthentication::from(authentication).into(),
            private_key,
            signing_algorithm: self.signing_algorithm.clone().unwrap_or_default(),
            issuer: self.token_issuer.clone().unwrap_or_default(),
            ..Default::default()
        };
        self.on_behalf_of.apply(&mut auth);
        Ok(Some(Method::OauthClientCredentials(auth)))
    }
}

/// The authentication flags of `integrations create` (at most one kind).
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// Authenticate with `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "TOKEN", conflicts_with_all = ["header", "oauth_redirect_uri"])]
    bearer_token: Option<String>,
    /// Authenticate with a header carrying a secret value.
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "oauth_redirect_uri")]
    header: Option<KeyValue>,
    /// Authenticate with an API key in a query parameter (OpenAPI
    /// integrations only; prefer `--header` where the API takes one).
    #[arg(
        long,
        value_name = "NAME=VALUE",
        conflicts_with_all = ["bearer_token", "header", "oauth_redirect_uri"]
    )]
    query_key: Option<KeyValue>,
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
    #[arg(long, value_name = "URL", requires = "oauth_redirect_uri")]
    oauth_issuer: Option<String>,
    /// An OAuth scope to ask for (repeatable) [default: the server's].
    #[arg(long, value_name = "SCOPE", requires = "oauth_redirect_uri")]
    oauth_scope: Vec<String>,
    /// One OAuth connection for the whole organization, made by an admin.
    #[arg(long, requires = "oauth_redirect_uri")]
    oauth_organization_wide: bool,
    /// OAuth client credentials.
    #[command(flatten)]
    client_credentials: ClientCredentialsArgs,
}

impl AuthArgs {
    /// The chosen method; `None` when the server needs none.
    pub fn method(self) -> Result<Option<Method>, CliError> {
        if let Some(method) = self.client_credentials.method()? {
            return Ok(Some(method));
        }
        Ok(self.static_or_code())
    }

    fn static_or_code(self) -> Option<Method> {
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
        if let Some(key) = self.query_key {
            return Some(Method::Query(mcp::QueryAuth {
                parameter_name: key.key,
                value: key.value,
                value_set: false,
            }));
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
