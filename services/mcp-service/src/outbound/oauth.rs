//! OAuth 2.0 client-credentials tokens for integrations that authenticate
//! that way: fetched from the token endpoint, cached until shortly before they
//! expire, fetched again after.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::domain::{address_policy::AddressPolicy, integration::IntegrationId};

/// A token is renewed this long before the endpoint says it expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// Lifetime assumed when the endpoint gives none.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

struct Cached {
    token: SecretString,
    expires_at: Instant,
    client_secret_fingerprint: Vec<u8>,
}

/// A client-credentials grant to perform.
#[derive(Debug)]
pub struct Grant<'a> {
    /// The integration the token is for (the cache key).
    pub integration_id: IntegrationId,
    /// Token endpoint.
    pub token_url: &'a str,
    /// Client id.
    pub client_id: &'a str,
    /// Client secret.
    pub client_secret: &'a SecretString,
    /// Requested scopes.
    pub scopes: &'a [String],
}

/// Fetches and caches client-credentials tokens.
#[derive(Clone)]
pub struct OAuthTokens {
    http: reqwest::Client,
    policy: Arc<AddressPolicy>,
    cache: Arc<Mutex<HashMap<IntegrationId, Cached>>>,
}

impl std::fmt::Debug for OAuthTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthTokens").finish_non_exhaustive()
    }
}

fn fingerprint(grant: &Grant<'_>) -> Vec<u8> {
    // Changing the endpoint, client or secret must not reuse an old token.
    [
        grant.token_url.as_bytes(),
        grant.client_id.as_bytes(),
        grant.client_secret.expose_secret().as_bytes(),
        grant.scopes.join(" ").as_bytes(),
    ]
    .join(&0u8)
}

impl OAuthTokens {
    /// Fetches tokens with `http`, whose dialling `policy` restricts.
    pub fn new(http: reqwest::Client, policy: Arc<AddressPolicy>) -> Self {
        Self {
            http,
            policy,
            cache: Arc::default(),
        }
    }

    /// A valid access token for `grant`, from the cache when fresh.
    pub async fn token(&self, grant: &Grant<'_>) -> Result<SecretString, String> {
        let fingerprint = fingerprint(grant);
        let mut cache = self.cache.lock().await;
        if let Some(cached) = cache.get(&grant.integration_id)
            && cached.client_secret_fingerprint == fingerprint
            && cached.expires_at > Instant::now()
        {
            return Ok(cached.token.clone());
        }
        let (token, lifetime) = self.fetch(grant).await?;
        cache.insert(
            grant.integration_id,
            Cached {
                token: token.clone(),
                expires_at: Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN),
                client_secret_fingerprint: fingerprint,
            },
        );
        Ok(token)
    }

    /// Forgets the cached token of an integration (after a 401, say).
    pub async fn invalidate(&self, integration_id: IntegrationId) {
        self.cache.lock().await.remove(&integration_id);
    }

    async fn fetch(&self, grant: &Grant<'_>) -> Result<(SecretString, Duration), String> {
        self.policy
            .check_url(grant.token_url)
            .map_err(|e| format!("token endpoint refused: {e}"))?;
        let mut form = vec![("grant_type", "client_credentials".to_owned())];
        if !grant.scopes.is_empty() {
            form.push(("scope", grant.scopes.join(" ")));
        }
        let response = self
            .http
            .post(grant.token_url)
            .basic_auth(grant.client_id, Some(grant.client_secret.expose_secret()))
            .form(&form)
            .send()
            .await
            .map_err(|e| format!("token endpoint unreachable: {}", e.without_url()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("token endpoint answered HTTP {}", status.as_u16()));
        }
        let body: TokenResponse = response
            .json()
            .await
            .map_err(|_| "token endpoint answered without an access_token".to_owned())?;
        let lifetime = body
            .expires_in
            .map_or(DEFAULT_LIFETIME, Duration::from_secs);
        Ok((SecretString::from(body.access_token), lifetime))
    }
}
