//! An integration's stored configuration as input again: what an update
//! that leaves the transport or the auth out re-checks, its secrets left
//! empty so that the stored ones are kept.

use crate::domain::{
    input::AuthInput,
    integration::{AuthConfig, Integration},
    transport::TransportInput,
};

/// The stored transport as input, so that changing only the auth re-checks
/// and keeps the transport (secret values carried over by the resolver).
pub(super) fn stored_transport_input(integration: &Integration) -> TransportInput {
    let transport = integration.transport.clone();
    let secret_env = transport
        .secret_env_names()
        .iter()
        .map(|name| (name.clone(), secrecy::SecretString::from(String::new())))
        .collect();
    TransportInput {
        transport,
        secret_env,
        client_key: None,
    }
}

/// The stored auth as input, secrets left out so the stored ones are kept.
pub(super) fn stored_auth_input(integration: &Integration) -> AuthInput {
    match &integration.auth {
        AuthConfig::None => AuthInput::None,
        AuthConfig::BearerToken => AuthInput::BearerToken { token: None },
        AuthConfig::Header { header_name } => AuthInput::Header {
            header_name: header_name.clone(),
            value: None,
        },
        AuthConfig::Query { parameter_name } => AuthInput::Query {
            parameter_name: parameter_name.clone(),
            value: None,
        },
        AuthConfig::OAuthClientCredentials {
            token_url,
            client_id,
            scopes,
            client_auth,
            issuer,
            on_behalf_of,
        } => AuthInput::OAuthClientCredentials {
            token_url: token_url.clone(),
            client_id: client_id.clone(),
            client_secret: None,
            scopes: scopes.clone(),
            client_auth: client_auth.clone(),
            private_key: None,
            issuer: issuer.clone(),
            on_behalf_of: on_behalf_of.clone(),
        },
        AuthConfig::OAuthAuthorizationCode(config) => AuthInput::OAuthAuthorizationCode {
            config: config.clone(),
            client_secret: None,
        },
    }
}
