//! Where the authorization code flow learns its authorization server: the
//! MCP server's challenge and metadata name it (or the integration pins
//! it), and its endpoints come from that issuer's own metadata document
//! (see [`pinned_metadata`]), checked against OAuth's URL rules before any
//! is requested or handed out.

use std::{sync::Arc, time::Duration};

use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, OAuthHttpClient};

use super::AuthorizationCodeFlows;
use crate::domain::{
    address_policy::AddressPolicy, integration::OAuthCodeConfig, oauth_url::check_oauth_url,
    ports::AuthorizationError,
};
use crate::outbound::{
    http::check_request_url,
    oauth::client::{check_bound_issuer, failed},
    oauth::pinned_issuer::pinned_metadata,
    oauth::store::Grant,
};

impl AuthorizationCodeFlows {
    /// A manager for the resource at `url` holding its authorization
    /// server's metadata, and the challenge the flow starts from: for an
    /// MCP server, discovered from it (see [`Self::manager`]); for a team's
    /// own service (`pinned_only`), the pinned issuer's own document alone
    /// (refused when its tokens would be DPoP-bound: those calls carry no
    /// proof).
    pub(super) async fn authorization_server(
        &self,
        pinned_only: bool,
        url: &str,
        config: &OAuthCodeConfig,
        challenge: Option<&str>,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata, Option<String>), AuthorizationError>
    {
        if !pinned_only {
            let challenge = match challenge {
                Some(challenge) => Some(challenge.to_owned()),
                None => self.challenge(url).await?,
            };
            let (manager, metadata) = self
                .manager(url, challenge.as_deref(), config.issuer.as_deref())
                .await?;
            return Ok((manager, metadata, challenge));
        }
        let issuer = config.issuer.as_deref().ok_or_else(|| {
            AuthorizationError::Failed(
                "OpenAPI and gRPC integrations name their authorization server (issuer)".into(),
            )
        })?;
        let metadata = pinned_metadata(&self.http, issuer)
            .await
            .map_err(AuthorizationError::Failed)?;
        check_endpoints(&self.policy, &metadata)?;
        if crate::outbound::oauth::dpop::wanted_by(&metadata) {
            return Err(AuthorizationError::Failed(
                "the authorization server binds its tokens with DPoP, which OpenAPI and gRPC \
                 integrations do not prove"
                    .into(),
            ));
        }
        let mut manager = AuthorizationManager::new_with_oauth_http_client(url, self.http.clone())
            .await
            .map_err(failed)?;
        manager.set_metadata(metadata.clone());
        Ok((manager, metadata, None))
    }

    /// A manager to complete `grant`'s flow with: the same resource the
    /// authorization request named (discovered again from an MCP server; a
    /// service's own URL).
    pub(super) async fn resumed(
        &self,
        grant: &Grant,
    ) -> Result<AuthorizationManager, AuthorizationError> {
        if grant.pinned_only {
            return AuthorizationManager::new_with_oauth_http_client(
                &grant.resource_url,
                self.oauth_http(grant),
            )
            .await
            .map_err(failed);
        }
        let (manager, _) = self
            .discovered(
                &grant.resource_url,
                grant.challenge.as_deref(),
                self.oauth_http(grant),
            )
            .await?;
        Ok(manager)
    }

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
