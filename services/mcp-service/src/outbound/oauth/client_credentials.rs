//! OAuth 2.0 client-credentials tokens for integrations that authenticate
//! that way: fetched from the token endpoint (the configured one, or the one
//! the configured issuer's own metadata names; never one the MCP server
//! points to), cached until shortly before they expire, fetched again after.
//!
//! Where the authorization server's metadata asks for DPoP (RFC 9449), the
//! token request carries a proof of the integration's own key (sealed with
//! its other secrets) and, when the server gives one, its nonce; a token
//! the server says is DPoP-bound is presented with proofs of that key.
//! The nonce is not kept between fetches: a server requiring one costs each
//! fetch (a few minutes apart at most once per token lifetime) one refused
//! request, and nothing about a tenant's server outlives its fetch.
//!
//! Token endpoints are chosen by tenants, so each is treated as hostile:
//! one integration's fetch never waits on another's (single flight per
//! integration, no process-wide lock), the response is read up to a bound,
//! and the lifetime it states is clamped.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use secrecy::{ExposeSecret, SecretString};

use crate::domain::{
    address_policy::AddressPolicy, integration::IntegrationId, oauth_url::check_oauth_url,
    ports::ByteSize,
};
use crate::outbound::oauth::{
    client::summary,
    dpop::{self, DPOP_HEADER, DpopKey, Nonce, USE_NONCE},
    http::PolicyOAuthHttp,
    pinned_issuer::pinned_metadata,
    token_request::{self, Credential, Target, WorkloadToken},
    token_response::{Issued, TokenError, TokenResponse, lifetime},
};

/// A token is renewed this long before the endpoint says it expires.
pub(super) const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// Why a grant naming neither a token URL nor an issuer is refused: its
/// token endpoint could come only from the MCP server's metadata.
pub(super) const UNPINNED: &str = "the integration names neither a token_url nor an issuer, so its token endpoint could come only from the MCP server's metadata: set the integration's token_url or issuer; no credential was sent";
/// Default bound on a token response.
const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// An access token of a grant, and the key it is bound to when the
/// authorization server bound it with DPoP.
#[derive(Clone)]
pub struct AccessToken {
    /// The token.
    pub token: SecretString,
    /// The key every request presenting it must prove possession of.
    pub dpop: Option<DpopKey>,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

struct Cached {
    token: AccessToken,
    expires_at: Instant,
    client_secret_fingerprint: Vec<u8>,
}

/// One integration's token, behind the lock its fetches are made under.
type TokenSlot = Arc<tokio::sync::Mutex<Option<Cached>>>;

/// A client-credentials grant to perform.
#[derive(Debug)]
pub struct Grant<'a> {
    /// The integration the token is for (the cache key).
    pub integration_id: IntegrationId,
    /// The MCP server the token is for: the `resource` asked for.
    pub mcp_url: &'a str,
    /// Token endpoint; empty to read it from the issuer's metadata.
    pub token_url: &'a str,
    /// The authorization server whose own metadata names the token
    /// endpoint when no token URL is configured.
    pub issuer: Option<&'a str>,
    /// Client id.
    pub client_id: &'a str,
    /// What the service proves itself with.
    pub credential: Credential<'a>,
    /// Requested scopes.
    pub scopes: &'a [String],
    /// The integration's DPoP key, proven where the authorization server
    /// asks for DPoP.
    pub dpop_key: Option<&'a DpopKey>,
}

/// The token endpoint a grant's request goes to.
pub(super) struct Endpoint {
    /// The token endpoint.
    pub token_url: String,
    /// Its authorization server's issuer, when known.
    pub issuer: Option<String>,
    /// Whether its metadata asks for DPoP-bound tokens (ES256 proofs).
    pub dpop: bool,
}

/// Why a token request failed.
#[derive(Debug)]
pub(super) enum TokenFailure {
    /// The authorization server refused what was sent (an HTTP 4xx).
    Refused(String),
    /// It could not be reached, failed, or answered nonsense.
    Failed(String),
}

impl TokenFailure {
    /// The failure as a sentence.
    pub fn into_message(self) -> String {
        match self {
            Self::Refused(message) | Self::Failed(message) => message,
        }
    }
}

/// Fetches and caches client-credentials tokens.
#[derive(Clone)]
pub struct OAuthTokens {
    http: reqwest::Client,
    discovery: Option<Arc<PolicyOAuthHttp>>,
    policy: Arc<AddressPolicy>,
    slots: Arc<Mutex<HashMap<IntegrationId, TokenSlot>>>,
    max_response_bytes: usize,
    workload: WorkloadToken,
}

impl std::fmt::Debug for OAuthTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthTokens").finish_non_exhaustive()
    }
}

fn fingerprint(grant: &Grant<'_>) -> Vec<u8> {
    // Changing the endpoint, client or credential must not reuse an old token.
    let (method, secret, algorithm) = match &grant.credential {
        Credential::SecretBasic(secret) => ("basic", secret.expose_secret(), ""),
        Credential::SecretPost(secret) => ("post", secret.expose_secret(), ""),
        Credential::PrivateKeyJwt { key, algorithm } => ("jwt", key.expose_secret(), *algorithm),
        Credential::WorkloadIdentity => ("workload", "", ""),
    };
    [
        grant.mcp_url.as_bytes(),
        grant.token_url.as_bytes(),
        grant.issuer.unwrap_or_default().as_bytes(),
        grant.client_id.as_bytes(),
        method.as_bytes(),
        secret.as_bytes(),
        algorithm.as_bytes(),
        grant.scopes.join(" ").as_bytes(),
        grant
            .dpop_key
            .map(DpopKey::thumbprint)
            .unwrap_or_default()
            .as_bytes(),
    ]
    .join(&0u8)
}

impl OAuthTokens {
    /// Fetches tokens with `http`, whose dialling `policy` restricts.
    pub fn new(http: reqwest::Client, policy: Arc<AddressPolicy>) -> Self {
        Self {
            http,
            discovery: None,
            policy,
            slots: Arc::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            workload: WorkloadToken::default(),
        }
    }

    /// Discovers token endpoints through `http` (metadata requests dialled
    /// through the address policy, bounded).
    pub fn with_discovery(mut self, http: PolicyOAuthHttp) -> Self {
        self.discovery = Some(Arc::new(http));
        self
    }

    /// Reads the workload identity token as `workload` says.
    pub fn with_workload_token(mut self, workload: WorkloadToken) -> Self {
        self.workload = workload;
        self
    }

    /// Reads token responses up to `bytes`.
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// How the workload identity token is read.
    pub(super) fn workload(&self) -> &WorkloadToken {
        &self.workload
    }

    /// The address policy OAuth requests are dialled under.
    pub(super) fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// The HTTP client of OAuth metadata and exchanges, when configured.
    pub(super) fn discovery(&self) -> Option<Arc<PolicyOAuthHttp>> {
        self.discovery.clone()
    }

    fn slot(&self, integration_id: IntegrationId) -> TokenSlot {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(integration_id)
            .or_default()
            .clone()
    }

    /// A valid access token for `grant`, from the cache when fresh. Callers
    /// of one integration share one fetch; other integrations never wait
    /// for it.
    pub async fn token(&self, grant: &Grant<'_>) -> Result<AccessToken, String> {
        let fingerprint = fingerprint(grant);
        let slot = self.slot(grant.integration_id);
        let mut cached = slot.lock().await;
        if let Some(token) = cached.as_ref()
            && token.client_secret_fingerprint == fingerprint
            && token.expires_at > Instant::now()
        {
            return Ok(token.token.clone());
        }
        let issued = self.fetch(grant).await?;
        let token = AccessToken {
            token: issued.token,
            dpop: grant.dpop_key.filter(|_| issued.dpop_bound).cloned(),
        };
        let now = Instant::now();
        *cached = Some(Cached {
            token: token.clone(),
            expires_at: now
                .checked_add(issued.lifetime.saturating_sub(EXPIRY_MARGIN))
                .unwrap_or(now),
            client_secret_fingerprint: fingerprint,
        });
        Ok(token)
    }

    /// Forgets the cached token of an integration: after the MCP server
    /// refused it with a 401 (revoked or rotated before its stated expiry).
    /// A fetch in flight under the slot's lock still completes into the old
    /// slot; the next call takes a new slot and fetches again.
    pub fn invalidate(&self, integration_id: IntegrationId) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&integration_id);
    }

    /// The response body, refused beyond the bound before it is all read.
    async fn bounded_body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, String> {
        let limit = self.max_response_bytes;
        let too_large = || {
            format!(
                "the token endpoint's answer is larger than {}",
                ByteSize(limit)
            )
        };
        if response
            .content_length()
            .is_some_and(|length| length > limit as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("token endpoint failed: {}", e.without_url()))?
        {
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// The token endpoint of `grant`: the configured one, or the one the
    /// configured issuer's own metadata names (see [`pinned_metadata`]).
    /// Never one the MCP server's metadata names: without a token URL or an
    /// issuer nothing is requested (a configuration saved before either
    /// was required).
    async fn endpoint(&self, grant: &Grant<'_>) -> Result<Endpoint, String> {
        if !grant.token_url.is_empty() {
            return Ok(Endpoint {
                token_url: grant.token_url.to_owned(),
                issuer: grant.issuer.map(str::to_owned),
                dpop: false,
            });
        }
        let issuer = grant.issuer.ok_or(UNPINNED)?;
        let http = self
            .discovery
            .clone()
            .ok_or("no HTTP client for OAuth metadata is configured; no credential was sent")?;
        let metadata = pinned_metadata(&http, issuer).await?;
        Ok(Endpoint {
            dpop: dpop::wanted_by(&metadata),
            token_url: metadata.token_endpoint,
            issuer: metadata.issuer,
        })
    }

    async fn fetch(&self, grant: &Grant<'_>) -> Result<Issued, String> {
        let endpoint = self.checked_endpoint(grant).await?;
        let request = token_request::build(
            &Target {
                client_id: grant.client_id,
                issuer: endpoint.issuer.as_deref(),
                token_url: &endpoint.token_url,
                resource: grant.mcp_url,
                scopes: grant.scopes,
            },
            &grant.credential,
            &self.workload,
        )
        .await?;
        let dpop_key = grant.dpop_key.filter(|_| endpoint.dpop);
        self.send(&endpoint.token_url, &request, dpop_key)
            .await
            .map_err(TokenFailure::into_message)
    }

    /// The token endpoint of `grant` (see [`Self::endpoint`]), refused
    /// unless OAuth may use it under the address policy.
    pub(super) async fn checked_endpoint(&self, grant: &Grant<'_>) -> Result<Endpoint, String> {
        let endpoint = self.endpoint(grant).await?;
        check_oauth_url(&self.policy, &endpoint.token_url)
            .map_err(|e| format!("token endpoint refused: it {e}"))?;
        Ok(endpoint)
    }

    /// Sends `request` to `token_url`, with a proof of `dpop_key` when
    /// given: the access token and how long it is good for, or why not.
    pub(super) async fn send(
        &self,
        token_url: &str,
        request: &token_request::TokenRequest,
        dpop_key: Option<&DpopKey>,
    ) -> Result<Issued, TokenFailure> {
        let nonce = Nonce::default();
        let (mut status, mut body, headers) = self.post(token_url, request, dpop_key, None).await?;
        // A server asking for its nonce is sent the request once more with
        // it, never more.
        if let Some(key) = dpop_key
            && status == http::StatusCode::BAD_REQUEST
            && serde_json::from_slice::<TokenError>(&body).is_ok_and(|e| e.error == USE_NONCE)
            && nonce.learn(&headers)
        {
            tracing::debug!("token endpoint asked for its dpop nonce; sending once more");
            (status, body, _) = self
                .post(token_url, request, Some(key), nonce.get().as_deref())
                .await?;
        }
        if !status.is_success() {
            // The OAuth error code only: a description is the server's
            // free text.
            let code = serde_json::from_slice::<TokenError>(&body)
                .map(|e| format!(" ({})", summary(&e.error)))
                .unwrap_or_default();
            let message = format!("token endpoint answered HTTP {}{code}", status.as_u16());
            // A 4xx is the server's refusal of what was sent; a 5xx its
            // own failure.
            return Err(if status.is_client_error() {
                TokenFailure::Refused(message)
            } else {
                TokenFailure::Failed(message)
            });
        }
        let body: TokenResponse = serde_json::from_slice(&body).map_err(|_| {
            TokenFailure::Failed("token endpoint answered without an access_token".to_owned())
        })?;
        let dpop_bound = dpop_key.is_some()
            && body
                .token_type
                .as_deref()
                .is_some_and(|kind| kind.eq_ignore_ascii_case("dpop"));
        Ok(Issued {
            token: SecretString::from(body.access_token),
            lifetime: lifetime(body.expires_in.as_ref()),
            dpop_bound,
        })
    }

    /// POSTs `request` to `token_url`, with a proof of `dpop_key` (and the
    /// server's `nonce`) when given: the answer's status, body (bounded)
    /// and headers.
    async fn post(
        &self,
        token_url: &str,
        request: &token_request::TokenRequest,
        dpop_key: Option<&DpopKey>,
        nonce: Option<&str>,
    ) -> Result<(http::StatusCode, Vec<u8>, http::HeaderMap), TokenFailure> {
        let mut post = self.http.post(token_url).form(&request.form);
        if let Some((client_id, secret)) = &request.basic {
            post = post.basic_auth(client_id, Some(secret.expose_secret()));
        }
        if let Some(key) = dpop_key {
            let proof = key
                .proof("POST", token_url, nonce, None)
                .map_err(|e| TokenFailure::Failed(e.to_string()))?;
            post = post.header(DPOP_HEADER, proof);
        }
        let response = post.send().await.map_err(|e| {
            TokenFailure::Failed(format!("token endpoint unreachable: {}", e.without_url()))
        })?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = self
            .bounded_body(response)
            .await
            .map_err(TokenFailure::Failed)?;
        Ok((status, body, headers))
    }
}
