//! The OAuth client an integration's users are authorized with, chosen so
//! that the MCP server (which names the authorization server) steers no
//! secret and multiplies no registration:
//!
//! - a pre-registered client's secret is bound to the issuer the admin
//!   entered it for: metadata naming another issuer is refused before any
//!   request carries the secret;
//! - a client registered dynamically is stored and reused by every user of
//!   the integration (one registration per integration and authorization
//!   server, not one per flow).

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};
use secrecy::ExposeSecret;

use crate::domain::{
    integration::{Integration, IntegrationId, OAuthCodeConfig, Secrets},
    ports::AuthorizationError,
};
use crate::outbound::oauth::store::{ClientRegistration, SqlOAuthStore, StoredClient};

/// How mcp-service names itself when it registers as a client.
const CLIENT_NAME: &str = "Switchboard";
/// Registrations are single-flight per integration under one of these
/// locks (a fixed number: memory does not grow with integrations).
const REGISTRATION_LOCKS: usize = 64;
/// The longest error text of an authorization server passed on.
const MAX_ERROR_CHARS: usize = 200;

/// `text` without control characters and cut to [`MAX_ERROR_CHARS`]: what
/// a remote server wrote never reaches a caller whole.
pub fn summary(text: &str) -> String {
    let mut cleaned: String = text
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_ERROR_CHARS + 1)
        .collect();
    if cleaned.chars().count() > MAX_ERROR_CHARS {
        cleaned = cleaned.chars().take(MAX_ERROR_CHARS).collect();
        cleaned.push('…');
    }
    cleaned
}

/// The error for the admin: a fixed text where the authorization server's
/// answer would be echoed (registration, token requests), otherwise a
/// bounded summary of the error and its causes (never a token: none
/// travels in an error).
pub fn failed(error: AuthError) -> AuthorizationError {
    let fixed = match &error {
        AuthError::RegistrationFailed(_) => {
            Some("the authorization server refused to register the client")
        }
        AuthError::TokenExchangeFailed(_) => {
            Some("the authorization server refused the authorization code")
        }
        AuthError::TokenRefreshFailed(_) | AuthError::TokenRefreshRejected(_) => {
            Some("the authorization server refused to refresh the tokens")
        }
        _ => None,
    };
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    let message = summary(&message);
    tracing::warn!(error = %message, "oauth authorization failed");
    AuthorizationError::Failed(fixed.map_or(message, str::to_owned))
}

/// An issuer identifier compared as RFC 8414 does, a root path's trailing
/// slash aside.
pub fn same_issuer(a: &str, b: &str) -> bool {
    let normal = |issuer: &str| {
        url::Url::parse(issuer)
            .map(|url| url.as_str().trim_end_matches('/').to_owned())
            .unwrap_or_else(|_| issuer.to_owned())
    };
    normal(a) == normal(b)
}

/// Refuses `metadata` unless it is the bound issuer's.
pub(super) fn check_bound_issuer(
    bound: Option<&str>,
    metadata: &AuthorizationMetadata,
) -> Result<(), AuthorizationError> {
    let Some(bound) = bound else {
        return Err(AuthorizationError::Failed(
            "the pre-registered client secret is bound to no issuer: set the integration's \
             issuer; no secret is sent"
                .into(),
        ));
    };
    match metadata.issuer.as_deref() {
        Some(issuer) if same_issuer(issuer, bound) => Ok(()),
        _ => Err(AuthorizationError::Failed(
            "the MCP server names an authorization server other than the issuer the client \
             secret was entered for; no secret is sent"
                .into(),
        )),
    }
}

/// Chooses and registers the clients of the authorization code flows.
#[derive(Clone)]
pub struct OAuthClients {
    store: SqlOAuthStore,
    registering: Arc<[tokio::sync::Mutex<()>]>,
}

impl std::fmt::Debug for OAuthClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClients").finish_non_exhaustive()
    }
}

impl OAuthClients {
    /// Clients kept in `store`.
    pub fn new(store: SqlOAuthStore) -> Self {
        Self {
            store,
            registering: (0..REGISTRATION_LOCKS)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
        }
    }

    fn registration_lock(&self, integration: IntegrationId) -> &tokio::sync::Mutex<()> {
        let index = integration.to_string().bytes().fold(0usize, |hash, byte| {
            hash.wrapping_mul(31).wrapping_add(usize::from(byte))
        }) % self.registering.len();
        &self.registering[index]
    }

    /// The client to authorize with: pre-registered (its secret only for
    /// its issuer), a client ID metadata document where supported, or the
    /// integration's dynamically registered one (registered once).
    pub async fn client(
        &self,
        manager: &mut AuthorizationManager,
        metadata: &AuthorizationMetadata,
        integration: &Integration,
        config: &OAuthCodeConfig,
        scopes: &[String],
    ) -> Result<ClientRegistration, AuthorizationError> {
        let registration = |client_id: String, client_secret: Option<String>| ClientRegistration {
            client_id,
            client_secret,
            redirect_uri: config.redirect_uri.clone(),
        };
        if let Some(client_id) = &config.client_id {
            let secret = integration
                .secrets
                .get(Secrets::OAUTH_CLIENT_SECRET)
                .map(|s| s.expose_secret().to_owned());
            if secret.is_some() || config.issuer.is_some() {
                check_bound_issuer(config.issuer.as_deref(), metadata)?;
            }
            return Ok(registration(client_id.clone(), secret));
        }
        let metadata_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        if let Some(url) = config
            .client_metadata_url
            .as_ref()
            .filter(|_| metadata_documents)
        {
            return Ok(registration(url.clone(), None));
        }
        self.registered(manager, metadata, integration, config, scopes)
            .await
    }

    /// The integration's dynamically registered client, registering one
    /// when none fits (another integration version, authorization server or
    /// redirect URI).
    async fn registered(
        &self,
        manager: &mut AuthorizationManager,
        metadata: &AuthorizationMetadata,
        integration: &Integration,
        config: &OAuthCodeConfig,
        scopes: &[String],
    ) -> Result<ClientRegistration, AuthorizationError> {
        let server = metadata
            .issuer
            .clone()
            .unwrap_or_else(|| metadata.token_endpoint.clone());
        let _single_flight = self.registration_lock(integration.id).lock().await;
        let stored = self
            .store
            .client(&integration.org_id, integration.id)
            .await?;
        if let Some(stored) = stored.filter(|stored| {
            stored.integration_version == integration.updated_at
                && stored.authorization_server == server
                && stored.client.redirect_uri == config.redirect_uri
        }) {
            return Ok(stored.client);
        }
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client(CLIENT_NAME, &config.redirect_uri, &scope_refs)
            .await
            .map_err(failed)?;
        let client = ClientRegistration {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            redirect_uri: config.redirect_uri.clone(),
        };
        self.store
            .save_client(
                &integration.org_id,
                integration.id,
                &StoredClient {
                    integration_version: integration.updated_at,
                    authorization_server: server,
                    client: client.clone(),
                },
            )
            .await?;
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_drops_control_characters_and_is_bounded() {
        let text = format!("bad\u{1b}]52;c;AAAA\u{7}{}", "x".repeat(10_000));
        let short = summary(&text);
        assert!(!short.chars().any(char::is_control));
        assert_eq!(short.chars().count(), MAX_ERROR_CHARS + 1);
    }

    #[test]
    fn issuers_match_up_to_a_root_slash_only() {
        assert!(same_issuer("https://as.example", "https://as.example/"));
        assert!(!same_issuer("https://as.example", "https://evil.example"));
        assert!(!same_issuer("https://as.example/a", "https://as.example/b"));
    }
}
