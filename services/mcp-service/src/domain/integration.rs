//! The integration model: validated newtypes and the configuration of one MCP
//! server connection.

use std::{collections::BTreeMap, fmt, time::Duration};

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use switchboard_server::FieldViolation;
use uuid::Uuid;

use super::{guardrails::GuardrailSettings, transport::Transport};

/// An integration's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IntegrationId(Uuid);

impl IntegrationId {
    /// A new, time-ordered id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// Parses the id of request field `field`.
    pub fn parse(field: &str, value: &str) -> Result<Self, FieldViolation> {
        Uuid::parse_str(value)
            .map(Self)
            .map_err(|_| FieldViolation::new(field, "must be an integration id (a UUID)"))
    }
}

impl Default for IntegrationId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for IntegrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// The organization that owns an integration; always from the caller's token.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrgId(pub String);

impl fmt::Display for OrgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The prefix of the tool names a model sees: `^[a-z][a-z0-9_]{0,31}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Slug(String);

impl Slug {
    /// Parses the slug of request field `field`.
    pub fn parse(field: &str, value: &str) -> Result<Self, FieldViolation> {
        let mut chars = value.chars();
        let valid = value.len() <= 32
            && chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            Ok(Self(value.to_owned()))
        } else {
            Err(FieldViolation::new(
                field,
                "must match ^[a-z][a-z0-9_]{0,31}$ (a lowercase letter, then up to 31 lowercase letters, digits or underscores)",
            ))
        }
    }

    /// The slug text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A human-readable name: 1 to 200 characters, not blank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    /// Parses the display name of request field `field`.
    pub fn parse(field: &str, value: &str) -> Result<Self, FieldViolation> {
        let value = value.trim();
        if value.is_empty() {
            Err(FieldViolation::new(field, "is required"))
        } else if value.chars().count() > 200 {
            Err(FieldViolation::new(field, "must be at most 200 characters"))
        } else {
            Ok(Self(value.to_owned()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where an integration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntegrationKind {
    /// Configured field by field.
    Custom,
    /// Made from the predefined catalog entry with this id.
    Predefined(String),
}

/// How requests to the server are authenticated. Secret values live in
/// [`Secrets`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuthConfig {
    /// No credentials.
    None,
    /// `Authorization: Bearer` with the [`Secrets::BEARER_TOKEN`] secret.
    BearerToken,
    /// A custom header carrying the [`Secrets::HEADER_VALUE`] secret.
    Header {
        /// The header name.
        header_name: String,
    },
    /// OAuth 2.0 client credentials, the client secret being
    /// [`Secrets::OAUTH_CLIENT_SECRET`] (or the private key
    /// [`Secrets::OAUTH_CLIENT_PRIVATE_KEY`]).
    OAuthClientCredentials {
        /// Token endpoint; empty to read it from the issuer's own metadata
        /// (one of the two is required since credentials go only to a
        /// pinned endpoint; a configuration saved before has neither, and
        /// its calls are refused).
        token_url: String,
        /// Client id.
        client_id: String,
        /// Requested scopes.
        scopes: Vec<String>,
        /// How the service proves itself at the token endpoint.
        #[serde(default)]
        client_auth: ClientAuth,
        /// The authorization server whose own metadata names the token
        /// endpoint when no token URL is configured.
        #[serde(default)]
        issuer: Option<String>,
        /// Whose identity the token carries: the service's, or the
        /// caller's (exchanged for their own token).
        #[serde(default)]
        on_behalf_of: OnBehalfOf,
    },
    /// OAuth 2.1 authorization code with PKCE, per user: each user connects
    /// their own account and calls carry that user's token. A pre-registered
    /// client's secret, if any, is [`Secrets::OAUTH_CLIENT_SECRET`].
    OAuthAuthorizationCode(OAuthCodeConfig),
    /// An API key in a query parameter, the [`Secrets::QUERY_VALUE`]
    /// secret (OpenAPI integrations only).
    Query {
        /// The parameter name.
        parameter_name: String,
    },
}

/// Whose identity an OAuth integration's token carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "grant", rename_all = "snake_case")]
pub enum OnBehalfOf {
    /// The service's own (client credentials, or workload identity).
    #[default]
    Service,
    /// The caller's: their token exchanged for one scoped to the MCP server
    /// (RFC 8693).
    TokenExchange {
        /// The `audience` asked for; `None` asks for the MCP server's URL.
        audience: Option<String>,
    },
    /// The caller's: their ID token exchanged at the enterprise identity
    /// provider for an identity assertion, presented at the MCP server's
    /// authorization server as a JWT bearer grant.
    EnterpriseManaged(IdentityProvider),
}

impl OnBehalfOf {
    /// Whether tokens are the caller's (each caller has their own).
    pub fn is_caller(&self) -> bool {
        !matches!(self, Self::Service)
    }
}

/// An enterprise identity provider of enterprise-managed authorization.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityProvider {
    /// Its issuer, which identity assertions must name.
    pub issuer: String,
    /// Its token endpoint: where the caller's ID token goes.
    pub token_url: String,
    /// The client registered with it (a public client).
    pub client_id: String,
}

/// How the service proves itself at an OAuth token endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum ClientAuth {
    /// The client id and secret in HTTP Basic authentication.
    #[default]
    ClientSecretBasic,
    /// The client id and secret in the request body.
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523 section 2.2).
    PrivateKeyJwt {
        /// The signing algorithm, one of [`ClientAuth::SIGNING_ALGORITHMS`].
        algorithm: String,
    },
    /// The service's workload identity token as a JWT bearer grant
    /// (RFC 7523 section 2.1); no client secret.
    WorkloadIdentity,
}

impl ClientAuth {
    /// The algorithms `private_key_jwt` assertions may be signed with.
    pub const SIGNING_ALGORITHMS: &'static [&'static str] = &[
        "ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA",
    ];
    /// The algorithm used when none is named.
    pub const DEFAULT_SIGNING_ALGORITHM: &'static str = "ES256";

    /// Whether the method sends [`Secrets::OAUTH_CLIENT_SECRET`].
    pub fn uses_client_secret(&self) -> bool {
        matches!(self, Self::ClientSecretBasic | Self::ClientSecretPost)
    }
}

/// How an integration's users are authorized with the authorization code
/// flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthCodeConfig {
    /// Where the authorization server sends the user's browser back.
    pub redirect_uri: String,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// The authorization server (its `issuer`) the pre-registered client
    /// was registered with: its secret is sent to that server only, and
    /// metadata naming another issuer is refused.
    #[serde(default)]
    pub issuer: Option<String>,
    /// The `https` URL of this client's metadata document (used as client id
    /// where the authorization server supports it).
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for; empty asks for those the server names.
    pub scopes: Vec<String>,
    /// One connection, made by an admin, for every user of the organization.
    #[serde(default)]
    pub organization_wide: bool,
}

/// Whose grant an organization-wide connection is kept under: no user id is
/// empty (a token's `sub` never is).
pub const ORGANIZATION_GRANT_USER: &str = "";

impl Integration {
    /// Whether calls carry a token of the authorization code flow.
    pub fn uses_authorization_code(&self) -> bool {
        matches!(self.auth, AuthConfig::OAuthAuthorizationCode(_))
    }

    /// Whether each user's calls carry a token of their own: they connect
    /// their own account (authorization code, not organization-wide), or
    /// their token is exchanged for one (on behalf of the caller).
    pub fn is_per_user(&self) -> bool {
        match &self.auth {
            AuthConfig::OAuthAuthorizationCode(c) => !c.organization_wide,
            AuthConfig::OAuthClientCredentials { on_behalf_of, .. } => on_behalf_of.is_caller(),
            _ => false,
        }
    }

    /// Whether calls carry a token exchanged for the caller's own.
    pub fn acts_for_caller(&self) -> bool {
        matches!(&self.auth, AuthConfig::OAuthClientCredentials { on_behalf_of, .. } if on_behalf_of.is_caller())
    }

    /// Whether an admin connects it once for the whole organization.
    pub fn is_organization_wide(&self) -> bool {
        matches!(&self.auth, AuthConfig::OAuthAuthorizationCode(c) if c.organization_wide)
    }

    /// The user whose grant `user`'s calls carry: theirs, or the
    /// organization's.
    pub fn grant_user<'a>(&self, user: &'a str) -> &'a str {
        if self.is_organization_wide() {
            ORGANIZATION_GRANT_USER
        } else {
            user
        }
    }
}

/// Time limits; `None` takes the service default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Connection and handshake limit, in milliseconds.
    pub connect_ms: Option<u64>,
    /// Per-call limit, in milliseconds.
    pub call_ms: Option<u64>,
}

impl Timeouts {
    /// Longest connect timeout an integration may ask for.
    pub const MAX_CONNECT: Duration = Duration::from_secs(60);
    /// Longest call timeout an integration may ask for.
    pub const MAX_CALL: Duration = Duration::from_secs(600);

    /// The connect timeout, or `default`.
    pub fn connect_or(&self, default: Duration) -> Duration {
        self.connect_ms.map_or(default, Duration::from_millis)
    }

    /// The call timeout, or `default`.
    pub fn call_or(&self, default: Duration) -> Duration {
        self.call_ms.map_or(default, Duration::from_millis)
    }
}

/// The credentials of an integration, by name. Write-only: they are sealed at
/// rest, never returned, and print as redacted.
#[derive(Clone, Default)]
pub struct Secrets(BTreeMap<String, SecretString>);

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Secrets {
    /// The bearer token of [`AuthConfig::BearerToken`].
    pub const BEARER_TOKEN: &'static str = "bearer_token";
    /// The header value of [`AuthConfig::Header`].
    pub const HEADER_VALUE: &'static str = "header_value";
    /// The parameter value of [`AuthConfig::Query`].
    pub const QUERY_VALUE: &'static str = "query_value";
    /// The client secret of [`AuthConfig::OAuthClientCredentials`].
    pub const OAUTH_CLIENT_SECRET: &'static str = "oauth_client_secret";
    /// The private key of [`ClientAuth::PrivateKeyJwt`] (PEM).
    pub const OAUTH_CLIENT_PRIVATE_KEY: &'static str = "oauth_client_private_key";
    /// The DPoP key of [`AuthConfig::OAuthClientCredentials`] (an ES256
    /// key pair's PKCS#8 document, base64url), made when the integration
    /// is: its tokens are bound to it where the authorization server asks
    /// for DPoP.
    pub const OAUTH_DPOP_KEY: &'static str = "oauth_dpop_key";
    /// The client key (PEM) of a gRPC target's mutual TLS.
    pub const GRPC_CLIENT_KEY: &'static str = "grpc_client_key";
    /// Prefix of secret environment variables of the stdio transport.
    pub const ENV_PREFIX: &'static str = "env:";

    /// Stores `value` under `name`.
    pub fn insert(&mut self, name: impl Into<String>, value: SecretString) {
        self.0.insert(name.into(), value);
    }

    /// The secret called `name`.
    pub fn get(&self, name: &str) -> Option<&SecretString> {
        self.0.get(name)
    }

    /// Whether a secret called `name` is stored.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The names of the stored secrets.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Whether no secret is stored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The secret environment of the stdio transport, by variable name.
    pub fn env(&self) -> impl Iterator<Item = (&str, &SecretString)> {
        self.0
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(Self::ENV_PREFIX).map(|name| (name, v)))
    }

    /// Serialises the secrets for sealing. The plaintext must only be handed
    /// to the cipher.
    pub fn to_plaintext(&self) -> Vec<u8> {
        let map: BTreeMap<&str, &str> = self
            .0
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose_secret()))
            .collect();
        serde_json::to_vec(&map).unwrap_or_default()
    }

    /// Parses secrets unsealed from storage.
    pub fn from_plaintext(plaintext: &[u8]) -> Result<Self, serde_json::Error> {
        let map: BTreeMap<String, String> = serde_json::from_slice(plaintext)?;
        Ok(Self(
            map.into_iter()
                .map(|(k, v)| (k, SecretString::from(v)))
                .collect(),
        ))
    }
}

/// An MCP integration of an organization.
#[derive(Debug, Clone)]
pub struct Integration {
    /// Its id.
    pub id: IntegrationId,
    /// The owning organization.
    pub org_id: OrgId,
    /// Human-readable name.
    pub display_name: DisplayName,
    /// Tool-name prefix, unique in the organization.
    pub slug: Slug,
    /// Custom or predefined.
    pub kind: IntegrationKind,
    /// How the server is reached.
    pub transport: Transport,
    /// How requests are authenticated.
    pub auth: AuthConfig,
    /// Whether it can be discovered and called.
    pub enabled: bool,
    /// Time limits.
    pub timeouts: Timeouts,
    /// The guardrails' actions set for this integration alone.
    pub guardrails: GuardrailSettings,
    /// Credentials.
    pub secrets: Secrets,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
    /// Last change, Unix milliseconds.
    pub updated_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_tool_prefix_rule() {
        for ok in [
            "a",
            "github",
            "my_server2",
            "a234567890123456789012345678901",
        ] {
            assert!(Slug::parse("slug", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "_abc",
            "GitHub",
            "has-dash",
            "a2345678901234567890123456789012x",
            "émoji",
        ] {
            assert!(Slug::parse("slug", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_round_trip_through_plaintext_and_never_print() {
        let mut secrets = Secrets::default();
        secrets.insert(Secrets::BEARER_TOKEN, SecretString::from("canary-token"));
        secrets.insert("env:API_KEY", SecretString::from("canary-env"));
        assert!(!format!("{secrets:?}").contains("canary"));
        let back = Secrets::from_plaintext(&secrets.to_plaintext()).expect("parses");
        assert_eq!(
            back.get(Secrets::BEARER_TOKEN).map(|s| s.expose_secret()),
            Some("canary-token")
        );
        assert_eq!(back.env().map(|(k, _)| k).collect::<Vec<_>>(), ["API_KEY"]);
    }
}
