//! Tokens on behalf of the caller: the caller's own token exchanged for one
//! scoped to the MCP server, by OAuth 2.0 Token Exchange (RFC 8693) at the
//! integration's token endpoint, or by enterprise-managed authorization (the
//! caller's ID token exchanged at the identity provider for an identity
//! assertion, presented at the MCP server's authorization server as a JWT
//! bearer grant, with rmcp's implementation of both steps).
//!
//! The token endpoint is the configured one or the one the configured
//! issuer's own metadata names, under the same rules as client credentials
//! (see [`super::client_credentials`]): the client's secret and the
//! caller's token go nowhere else, and never to an endpoint the MCP server
//! points to. Exchanged tokens
//! are kept in memory per organization, integration (as configured now),
//! caller and audience until shortly before they expire (and never past the
//! caller's own token's expiry); the cache holds a bounded number of them,
//! the least recently used forgotten first.

use std::{
    num::NonZeroUsize,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use hashlink::LruCache;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAssertion, EmaClientAssertionProvider,
    EmaClientAuthentication, EmaError, EmaExchangeRequest,
};
use secrecy::{ExposeSecret as _, SecretString};

use super::{
    client_credentials::{EXPIRY_MARGIN, Grant, OAuthTokens, TokenFailure},
    token_request::{self, Credential, GrantKind, Target},
};
use crate::domain::{
    caller_token::{CallerToken, caller_token},
    integration::{IdentityProvider, IntegrationId, OnBehalfOf},
    oauth_url::check_oauth_url,
    ports::CallError,
};

/// Default bound on the exchanged tokens kept.
pub const DEFAULT_MAX_EXCHANGED_TOKENS: usize = 10_000;

/// What an exchanged token is kept under: never shared between
/// organizations, integrations (or versions of one), callers or audiences.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ExchangeKey {
    org: String,
    integration: IntegrationId,
    version: i64,
    subject: String,
    audience: String,
}

struct Exchanged {
    token: SecretString,
    expires_at: Instant,
}

/// One caller's token, behind the lock its exchanges are made under.
type ExchangeSlot = Arc<tokio::sync::Mutex<Option<Exchanged>>>;

/// The exchanged tokens, bounded, least recently used forgotten first.
#[derive(Clone)]
pub struct ExchangedTokens {
    slots: Arc<Mutex<LruCache<ExchangeKey, ExchangeSlot>>>,
}

impl std::fmt::Debug for ExchangedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangedTokens").finish_non_exhaustive()
    }
}

impl Default for ExchangedTokens {
    fn default() -> Self {
        Self::new(NonZeroUsize::new(DEFAULT_MAX_EXCHANGED_TOKENS).unwrap_or(NonZeroUsize::MIN))
    }
}

impl ExchangedTokens {
    /// Keeps at most `entries` tokens.
    pub fn new(entries: NonZeroUsize) -> Self {
        Self {
            slots: Arc::new(Mutex::new(LruCache::new(entries.get()))),
        }
    }

    fn slot(&self, key: &ExchangeKey) -> ExchangeSlot {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = slots.get(key) {
            return slot.clone();
        }
        let slot = ExchangeSlot::default();
        slots.insert(key.clone(), slot.clone());
        slot
    }

    /// How many tokens are kept.
    pub fn len(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets the tokens of `subject` with `integration`: after the MCP
    /// server refused one with a 401.
    pub fn invalidate(&self, integration: IntegrationId, subject: &str) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let gone: Vec<ExchangeKey> = slots
            .iter()
            .filter(|(key, _)| key.integration == integration && key.subject == subject)
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            slots.remove(&key);
        }
    }
}

/// A token to get on behalf of the caller.
#[derive(Debug)]
pub struct CallerGrant<'a> {
    /// The client's side of the grant (as for client credentials).
    pub grant: Grant<'a>,
    /// How the caller's token is exchanged.
    pub on_behalf_of: &'a OnBehalfOf,
    /// The integration's organization.
    pub org: &'a str,
    /// The integration's configuration version.
    pub version: i64,
    /// The caller (their user id).
    pub subject: &'a str,
}

impl CallerGrant<'_> {
    fn audience(&self) -> &str {
        match self.on_behalf_of {
            OnBehalfOf::TokenExchange {
                audience: Some(audience),
            } => audience,
            _ => self.grant.mcp_url,
        }
    }
}

/// The caller's token failure as a call's failure: a refusal is the
/// caller's (their token was not accepted), anything else the server's.
fn call_error(failure: TokenFailure) -> CallError {
    match failure {
        TokenFailure::Refused(message) => {
            CallError::ExchangeRefused(format!("the caller's token was not exchanged: {message}"))
        }
        TokenFailure::Failed(message) => {
            CallError::Connect(format!("the token exchange failed: {message}"))
        }
    }
}

/// The token of `grant` for the caller of the call being served, from the
/// cache while it is fresh. Callers of one key share one exchange.
pub async fn token(
    tokens: &OAuthTokens,
    cache: &ExchangedTokens,
    grant: &CallerGrant<'_>,
) -> Result<SecretString, CallError> {
    let caller = caller_token().ok_or_else(|| {
        CallError::ExchangeRefused(
            "this integration acts on behalf of the caller, and the call carries no token to exchange"
                .into(),
        )
    })?;
    if grant.subject.is_empty() {
        // A session for nobody in particular (a validation's probe) with
        // the token of whoever asked for it: used once, never kept where a
        // later caller could be given it.
        return Ok(fresh(tokens, grant, &caller).await?.0);
    }
    let key = ExchangeKey {
        org: grant.org.to_owned(),
        integration: grant.grant.integration_id,
        version: grant.version,
        subject: grant.subject.to_owned(),
        audience: grant.audience().to_owned(),
    };
    let slot = cache.slot(&key);
    let mut cached = slot.lock().await;
    if let Some(token) = cached.as_ref()
        && token.expires_at > Instant::now()
    {
        return Ok(token.token.clone());
    }
    let (token, lifetime) = fresh(tokens, grant, &caller).await?;
    let now = Instant::now();
    let lifetime = lifetime.min(caller_lifetime(&caller));
    *cached = Some(Exchanged {
        token: token.clone(),
        expires_at: now
            .checked_add(lifetime.saturating_sub(EXPIRY_MARGIN))
            .unwrap_or(now),
    });
    Ok(token)
}

/// A token of `grant` exchanged now for `caller`'s, and its lifetime.
async fn fresh(
    tokens: &OAuthTokens,
    grant: &CallerGrant<'_>,
    caller: &CallerToken,
) -> Result<(SecretString, Duration), CallError> {
    match grant.on_behalf_of {
        OnBehalfOf::Service => Err(CallError::Connect(
            "the integration does not act on behalf of the caller".into(),
        )),
        OnBehalfOf::TokenExchange { .. } => exchange(tokens, grant, caller).await,
        OnBehalfOf::EnterpriseManaged(idp) => enterprise_managed(tokens, grant, idp, caller).await,
    }
}

/// How long the caller's own token is good for: an exchanged token is not
/// kept past it.
fn caller_lifetime(caller: &CallerToken) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    caller.expires_at().map_or(Duration::MAX, |exp| {
        Duration::from_secs(exp.saturating_sub(now))
    })
}

/// RFC 8693 at the integration's token endpoint.
async fn exchange(
    tokens: &OAuthTokens,
    grant: &CallerGrant<'_>,
    caller: &CallerToken,
) -> Result<(SecretString, Duration), CallError> {
    let endpoint = tokens
        .checked_endpoint(&grant.grant)
        .await
        .map_err(CallError::Connect)?;
    let request = token_request::build_for(
        &Target {
            client_id: grant.grant.client_id,
            issuer: endpoint.issuer.as_deref(),
            token_url: &endpoint.token_url,
            resource: grant.grant.mcp_url,
            scopes: grant.grant.scopes,
        },
        &grant.grant.credential,
        tokens.workload(),
        &GrantKind::TokenExchange {
            subject_token: caller.secret(),
            audience: grant.audience(),
        },
    )
    .await
    .map_err(CallError::Connect)?;
    tokens
        .send(&endpoint.token_url, &request, None)
        .await
        .map(|issued| (issued.token, issued.lifetime))
        .map_err(call_error)
}

/// Signs `private_key_jwt` client assertions for rmcp's exchange.
struct Signer {
    key: SecretString,
    algorithm: String,
}

#[async_trait::async_trait]
impl EmaClientAssertionProvider for Signer {
    async fn create_assertion(
        &self,
        server: &EmaAuthorizationServer,
    ) -> Result<EmaClientAssertion, Box<dyn std::error::Error + Send + Sync>> {
        token_request::client_assertion(
            &server.client_id,
            &server.issuer,
            &self.key,
            &self.algorithm,
        )
        .map(EmaClientAssertion::new)
        .map_err(Into::into)
    }
}

/// The client's authentication at the MCP server's authorization server,
/// in rmcp's terms.
fn ema_client_authentication(
    credential: &Credential<'_>,
) -> Result<EmaClientAuthentication, CallError> {
    let secret = |s: &SecretString| oauth2::ClientSecret::new(s.expose_secret().to_owned());
    Ok(match credential {
        Credential::SecretBasic(s) => EmaClientAuthentication::ClientSecretBasic(secret(s)),
        Credential::SecretPost(s) => EmaClientAuthentication::ClientSecretPost(secret(s)),
        Credential::PrivateKeyJwt { key, algorithm } => {
            EmaClientAuthentication::JwtAssertion(Arc::new(Signer {
                key: (*key).clone(),
                algorithm: (*algorithm).to_owned(),
            }))
        }
        Credential::WorkloadIdentity => {
            return Err(CallError::Connect(
                "enterprise-managed authorization needs a client secret or a private key".into(),
            ));
        }
    })
}

/// The identity assertion grant: the caller's ID token for an assertion at
/// the identity provider, the assertion for an access token at the MCP
/// server's authorization server.
async fn enterprise_managed(
    tokens: &OAuthTokens,
    grant: &CallerGrant<'_>,
    idp: &IdentityProvider,
    caller: &CallerToken,
) -> Result<(SecretString, Duration), CallError> {
    let endpoint = tokens
        .checked_endpoint(&grant.grant)
        .await
        .map_err(CallError::Connect)?;
    let issuer = endpoint.issuer.ok_or_else(|| {
        CallError::Connect(
            "enterprise-managed authorization needs the authorization server's issuer: set the integration's issuer; no credential was sent"
                .into(),
        )
    })?;
    check_oauth_url(tokens.policy(), &idp.token_url)
        .map_err(|e| CallError::Connect(format!("identity provider refused: it {e}")))?;
    let http = tokens.discovery().ok_or_else(|| {
        CallError::Connect("no HTTP client for the identity provider is configured".into())
    })?;
    let identity_provider =
        EmaAuthorizationServer::new(&idp.issuer, &idp.token_url, &idp.client_id);
    let resource_server =
        EmaAuthorizationServer::new(issuer, endpoint.token_url, grant.grant.client_id)
            .with_client_authentication(ema_client_authentication(&grant.grant.credential)?);
    let id_token = caller.secret().expose_secret();
    let token = EmaExchangeRequest::new_with_id_token(
        identity_provider,
        resource_server,
        grant.grant.mcp_url,
        id_token,
    )
    .with_scopes(grant.grant.scopes.iter().cloned())
    .exchange(http.as_ref(), http.as_ref())
    .await
    .map_err(ema_error)?;
    Ok((
        SecretString::from(token.access_token.secret().to_owned()),
        token
            .expires_in
            .unwrap_or(super::token_response::DEFAULT_LIFETIME)
            .min(super::token_response::MAX_LIFETIME),
    ))
}

/// rmcp's failure (already free of secrets and server text) as a call's.
fn ema_error(error: EmaError) -> CallError {
    let message = error.to_string();
    call_error(match error {
        EmaError::InvalidGrant(_)
        | EmaError::InsufficientUserAuthentication(_)
        | EmaError::OAuthRejected { .. } => TokenFailure::Refused(message),
        _ => TokenFailure::Failed(message),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(subject: &str) -> ExchangeKey {
        ExchangeKey {
            org: "org".into(),
            integration: IntegrationId::new(),
            version: 1,
            subject: subject.into(),
            audience: "https://mcp.example".into(),
        }
    }

    #[test]
    fn the_cache_keeps_at_most_its_bound_forgetting_the_least_recently_used() {
        let cache = ExchangedTokens::new(NonZeroUsize::new(2).expect("non-zero"));
        let (a, b, c) = (key("a"), key("b"), key("c"));
        let first = cache.slot(&a);
        cache.slot(&b);
        // `a` used again: `b` is now the least recently used.
        assert!(Arc::ptr_eq(&first, &cache.slot(&a)));
        cache.slot(&c);
        assert_eq!(cache.len(), 2);
        assert!(Arc::ptr_eq(&first, &cache.slot(&a)), "a was kept");
        let slots = cache.slots.lock().expect("unpoisoned");
        assert!(!slots.contains_key(&b), "b was forgotten");
    }
}
