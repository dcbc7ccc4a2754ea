//! How a streamable HTTP session proves itself: the integration's
//! credentials (fixed, a client-credentials token, one exchanged for the
//! caller's, or the authorization code flow's), and the one place where a
//! DPoP-bound token decides which client carries them.

use std::collections::HashMap;

use rmcp::{
    service::ClientInitializeError,
    transport::{
        AuthClient,
        auth::AuthorizationManager,
        streamable_http_client::{AuthRequiredError, StreamableHttpClientTransportConfig},
    },
};
use secrecy::ExposeSecret;

use super::{HttpRoom, capped::CappedHttpClient, dpop::DpopClient, handshake};
use crate::{
    domain::{
        integration::{AuthConfig, Integration, Secrets},
        ports::CallError,
    },
    outbound::{
        mcp::transport::{Session, SessionClient},
        oauth::dpop::DpopKey,
    },
};

/// What carries a session's credentials: the authorization code flow's
/// manager (the token on every request, refreshed), and the key the token
/// is bound to when its authorization server bound it with DPoP.
pub(super) struct Carrier {
    pub(super) manager: Option<AuthorizationManager>,
    pub(super) dpop: Option<DpopKey>,
}

impl HttpRoom {
    /// The handshake over `capped` with the credentials `carrier` holds: a
    /// DPoP-bound token is never sent as a bearer token, and the
    /// authorization code flow's manager sits outside the DPoP proofs (it
    /// sets the token the proofs are made for).
    pub(super) async fn handshake_as<H: SessionClient>(
        &self,
        capped: CappedHttpClient,
        carrier: Carrier,
        config: StreamableHttpClientTransportConfig,
        handler: H,
        integration: &Integration,
    ) -> Result<Session<H>, ClientInitializeError> {
        let dpop = |key| DpopClient::new(capped.clone(), key, self.http.clone());
        match (carrier.manager, carrier.dpop) {
            (Some(manager), Some(key)) => {
                let client = AuthClient::new(dpop(key), manager);
                handshake(client, config, handler, integration).await
            }
            (Some(manager), None) => {
                let client = AuthClient::new(capped.clone(), manager);
                handshake(client, config, handler, integration).await
            }
            (None, Some(key)) => handshake(dpop(key), config, handler, integration).await,
            (None, None) => handshake(capped.clone(), config, handler, integration).await,
        }
    }

    /// Whether `error` is the server refusing a client-credentials token
    /// with a 401, in which case the cached token is forgotten. A 401 means
    /// the server refused the request before running anything, so it is
    /// safe to make once more with a fresh token.
    /// `user` is whom the session acts for: the caller whose exchanged
    /// token is forgotten, for an integration acting on their behalf.
    pub fn refused_token(
        &self,
        integration: &Integration,
        user: &str,
        error: &(dyn std::error::Error + 'static),
    ) -> bool {
        if !matches!(integration.auth, AuthConfig::OAuthClientCredentials { .. }) {
            return false;
        }
        let mut source = Some(error);
        let mut refused = false;
        while let Some(current) = source {
            if current.is::<AuthRequiredError>() {
                refused = true;
                break;
            }
            source = current.source();
        }
        if refused {
            tracing::info!(integration_id = %integration.id, "token refused with 401; fetching a new one");
            self.tokens.forget(integration, user);
        }
        refused
    }

    /// `config` with the integration's credentials for `user`: fixed ones,
    /// or a token exchanged for the caller's own; and the key the token is
    /// bound to, when its authorization server bound it with DPoP.
    pub(super) async fn static_auth(
        &self,
        integration: &Integration,
        user: &str,
        mut config: StreamableHttpClientTransportConfig,
    ) -> Result<(StreamableHttpClientTransportConfig, Option<DpopKey>), CallError> {
        match &integration.auth {
            AuthConfig::None | AuthConfig::OAuthAuthorizationCode(_) => {}
            AuthConfig::BearerToken => {
                let token = integration
                    .secrets
                    .get(Secrets::BEARER_TOKEN)
                    .ok_or_else(|| CallError::Connect("the bearer token is not set".into()))?;
                config = config.auth_header(token.expose_secret().to_owned());
            }
            AuthConfig::Header { header_name } => {
                let invalid = |what: &str| CallError::Connect(what.to_owned());
                let value = integration
                    .secrets
                    .get(Secrets::HEADER_VALUE)
                    .ok_or_else(|| invalid("the header value is not set"))?;
                let name = http::HeaderName::from_bytes(header_name.as_bytes())
                    .map_err(|_| invalid("the stored header name is invalid"))?;
                let mut value = http::HeaderValue::from_str(value.expose_secret())
                    .map_err(|_| invalid("the stored header value is invalid"))?;
                value.set_sensitive(true);
                config = config.custom_headers(HashMap::from([(name, value)]));
            }
            AuthConfig::OAuthClientCredentials { .. } => {
                let token = self.tokens.token(integration, user).await?;
                config = config.auth_header(token.token.expose_secret().to_owned());
                return Ok((config, token.dpop));
            }
            AuthConfig::Query { .. } => {
                return Err(CallError::Connect(
                    "an API key in the query is for OpenAPI integrations only".into(),
                ));
            }
        }
        Ok((config, None))
    }
}
