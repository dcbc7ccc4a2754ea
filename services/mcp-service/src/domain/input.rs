//! What callers send to create or change an integration, before the service
//! has checked it against policy and turned it into an [`Integration`].
//!
//! [`Integration`]: super::integration::Integration

use std::collections::BTreeMap;

use secrecy::SecretString;

use super::{
    guardrails::GuardrailSettings,
    integration::{ClientAuth, DisplayName, OAuthCodeConfig, OnBehalfOf, Slug, Timeouts},
    transport::TransportInput,
};

/// An authentication method as sent by a caller. A secret left `None` keeps
/// the stored one when the method is unchanged.
#[derive(Debug, Clone)]
pub enum AuthInput {
    /// No credentials.
    None,
    /// A bearer token.
    BearerToken {
        /// The token.
        token: Option<SecretString>,
    },
    /// A custom header.
    Header {
        /// The header name.
        header_name: String,
        /// The header value.
        value: Option<SecretString>,
    },
    /// OAuth client credentials.
    OAuthClientCredentials {
        /// Token endpoint.
        token_url: String,
        /// Client id.
        client_id: String,
        /// Client secret.
        client_secret: Option<SecretString>,
        /// Requested scopes.
        scopes: Vec<String>,
        /// How the service proves itself at the token endpoint.
        client_auth: ClientAuth,
        /// The private key of `private_key_jwt` (PEM).
        private_key: Option<SecretString>,
        /// The authorization server whose own metadata names the token
        /// endpoint when no token URL is configured.
        issuer: Option<String>,
        /// Whose identity the token carries.
        on_behalf_of: OnBehalfOf,
    },
    /// OAuth authorization code, per user.
    OAuthAuthorizationCode {
        /// The flow's settings.
        config: OAuthCodeConfig,
        /// A pre-registered client's secret.
        client_secret: Option<SecretString>,
    },
    /// An API key in a query parameter.
    Query {
        /// The parameter name.
        parameter_name: String,
        /// Its value.
        value: Option<SecretString>,
    },
}

/// Where a new integration's configuration comes from.
// One value per create request, moved once: boxing the larger variant
// would add an allocation and save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Source {
    /// Given field by field.
    Custom {
        /// How the server is reached.
        transport: TransportInput,
        /// How requests are authenticated.
        auth: AuthInput,
    },
    /// A catalog entry plus its secrets.
    Predefined {
        /// The entry id.
        catalog_id: String,
        /// The secrets, by the catalog's names.
        secrets: BTreeMap<String, SecretString>,
    },
}

/// A request to create an integration.
#[derive(Debug, Clone)]
pub struct NewIntegration {
    /// Human-readable name.
    pub display_name: DisplayName,
    /// Tool-name prefix.
    pub slug: Slug,
    /// Its configuration.
    pub source: Source,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Whether it starts enabled.
    pub enabled: bool,
    /// The guardrails' actions set for it.
    pub guardrails: GuardrailSettings,
}

/// A partial update; `None` fields are left as they are.
#[derive(Debug, Clone, Default)]
pub struct IntegrationPatch {
    /// New name.
    pub display_name: Option<DisplayName>,
    /// New slug.
    pub slug: Option<Slug>,
    /// New transport.
    pub transport: Option<TransportInput>,
    /// New authentication.
    pub auth: Option<AuthInput>,
    /// New time limits.
    pub timeouts: Option<Timeouts>,
    /// New guardrail settings.
    pub guardrails: Option<GuardrailSettings>,
}
