//! Where the authorization code flow learns its authorization server: the
//! MCP server's challenge and metadata name it (or the integration pins
//! it), and its endpoints come from that issuer's own metadata document
//! (see [`pinned_metadata`]), checked against OAuth's URL rules before any
//! is requested or handed out.

use std::{sync::Arc, time::Duration};

use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, OAuthHttpClient};

use super::AuthorizationCodeFlows;
use crate::domain::{
    address_policy::AddressPolicy, oauth_url::check_oauth_url, ports::AuthorizationError,
};
use crate::outbound::{
    http::check_request_url,
    oauth::client::{check_bound_issuer, failed},
    oauth::pinned_issuer::pinned_metadata,
};

impl AuthorizationCodeFlows {
    /// A manager for the MCP server at `url`, requesting through `http`,
    /// that has resolved its metadata (from `challenge` when given), and
    /// the authorization server metadata the MCP server points to.
    pub(super) async fn discovered(
        &self,
        url: &str,
        challenge: Option<&str>,
        http: Arc<dyn OAuthHttpClient>,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthorizationError> {
        let manager = AuthorizationManager::new_with_oauth_http_client(url, http)
            .await
            .map_err(failed)?;
        let named = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(failed)?
            .metadata;
        Ok((manager, named))
    }

    /// A manager for the MCP server at `url` (see [`Self::discovered`])
    /// holding the metadata of its authorization server: the one the MCP
    /// server names, or `pinned`, with the endpoints that issuer's own
    /// document names (see [`pinned_metadata`]), never those of a document
    /// the MCP server points to.
    pub(super) async fn manager(
        &self,
        url: &str,
        challenge: Option<&str>,
        pinned: Option<&str>,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthorizationError> {
        let (mut manager, named) = self.discovered(url, challenge, self.http.clone()).await?;
        if pinned.is_some() {
            check_bound_issuer(pinned, &named)?;
        }
        // Without an issuer (the endpoints a server of the 2025-03-26
        // revision implies on its own origin) there is no document to read.
        let metadata = match pinned.or(named.issuer.as_deref()) {
            Some(issuer) => pinned_metadata(&self.http, issuer)
                .await
                .map_err(AuthorizationError::Failed)?,
            None => named,
        };
        check_endpoints(&self.policy, &metadata)?;
        manager.set_metadata(metadata.clone());
        Ok((manager, metadata))
    }

    /// The server's `WWW-Authenticate` challenge to an unauthenticated
    /// request, if it sends one.
    pub(super) async fn challenge(&self, url: &str) -> Result<Option<String>, AuthorizationError> {
        check_request_url(&self.policy, url)
            .map_err(|e| AuthorizationError::Failed(e.to_string()))?;
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
        let response = self
            .probe
            .post(url)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .json(&body)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .map_err(|e| {
                AuthorizationError::Failed(format!(
                    "the MCP server is unreachable: {}",
                    e.without_url()
                ))
            })?;
        Ok(response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned))
    }
}

/// Refuses metadata whose endpoints OAuth may not use (see
/// [`check_oauth_url`]): before any of them is requested or handed out.
fn check_endpoints(
    policy: &AddressPolicy,
    metadata: &AuthorizationMetadata,
) -> Result<(), AuthorizationError> {
    let endpoints = [
        (
            "authorization endpoint",
            Some(&metadata.authorization_endpoint),
        ),
        ("token endpoint", Some(&metadata.token_endpoint)),
        (
            "registration endpoint",
            metadata.registration_endpoint.as_ref(),
        ),
    ];
    for (name, url) in endpoints {
        if let Some(Err(error)) = url.map(|url| check_oauth_url(policy, url)) {
            return Err(AuthorizationError::Failed(format!(
                "the authorization server's {name} {error}"
            )));
        }
    }
    Ok(())
}
