//! An identity provider's JSON Web Key Set: fetched, cached, and fetched
//! again as the provider rotates its keys, every fetch bounded in time, size
//! and rate.

use std::{
    collections::HashMap,
    str::FromStr as _,
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use anyhow::{Context as _, bail};
use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse},
};
use serde::Deserialize;

use crate::{AuthError, token::JwksConfig};

/// One verification key of the set, with the only algorithm it accepts.
#[derive(Clone)]
pub(crate) struct VerifyingKey {
    pub decoding: DecodingKey,
    pub algorithm: Algorithm,
}

type KeyMap = HashMap<String, Arc<VerifyingKey>>;

#[derive(Default)]
struct State {
    keys: Arc<KeyMap>,
    /// When the keys held were fetched; `None` before the first success.
    fetched_at: Option<Instant>,
    /// When a fetch last started, successful or not: the rate bound.
    attempted_at: Option<Instant>,
}

/// The cached key set of one URL.
pub(crate) struct JwksKeys {
    config: JwksConfig,
    client: reqwest::Client,
    state: RwLock<State>,
    /// One fetch at a time; callers that wait for it then use its result.
    fetching: tokio::sync::Mutex<()>,
    /// A background refresh is under way.
    refreshing: AtomicBool,
}

impl JwksKeys {
    /// A cache of the set at `config.url`; nothing is fetched until a token
    /// needs a key.
    pub(crate) fn new(config: JwksConfig) -> Result<Self, AuthError> {
        let url = url::Url::parse(&config.url)
            .map_err(|e| AuthError::Key(format!("invalid JWKS URL: {e}")))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(AuthError::Key("the JWKS URL must be http(s)".into()));
        }
        if config.max_bytes == 0 || config.timeout.is_zero() || config.refresh_interval.is_zero() {
            return Err(AuthError::Key(
                "the JWKS size limit, timeout and refresh interval must be positive".into(),
            ));
        }
        // TLS uses ring; the provider is process-wide and may be set already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| AuthError::Key(format!("failed to build the JWKS client: {e}")))?;
        Ok(Self {
            config,
            client,
            state: RwLock::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
            refreshing: AtomicBool::new(false),
        })
    }

    pub(crate) fn url(&self) -> &str {
        &self.config.url
    }

    /// The key `kid` among those held now.
    pub(crate) fn cached(&self, kid: &str) -> Result<Arc<VerifyingKey>, AuthError> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        match (state.keys.get(kid), state.fetched_at) {
            (Some(key), _) => Ok(key.clone()),
            (None, None) => Err(AuthError::KeysUnavailable),
            (None, Some(_)) => Err(AuthError::Invalid),
        }
    }

    /// The key `kid`: a held one (refreshing the set in the background when
    /// it is old), or else one from a fetch made now if the rate allows.
    pub(crate) async fn key(self: &Arc<Self>, kid: &str) -> Result<Arc<VerifyingKey>, AuthError> {
        let stale = {
            let state = self.state.read().unwrap_or_else(|e| e.into_inner());
            state
                .fetched_at
                .is_none_or(|at| at.elapsed() >= self.config.refresh_interval)
        };
        match self.cached(kid) {
            Ok(key) => {
                if stale {
                    self.refresh_in_background();
                }
                Ok(key)
            }
            // A new key the provider rotated in, or a forged `kid`: the rate
            // bound in `refresh` keeps the second from costing more than the
            // first.
            Err(_) => {
                self.refresh().await;
                self.cached(kid)
            }
        }
    }

    fn refresh_in_background(self: &Arc<Self>) {
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let keys = self.clone();
        tokio::spawn(async move {
            keys.refresh().await;
            keys.refreshing.store(false, Ordering::Release);
        });
    }

    /// Fetches the set unless another fetch started less than the minimum
    /// refresh interval ago; a failed fetch keeps the keys held.
    async fn refresh(&self) {
        let _one_at_a_time = self.fetching.lock().await;
        {
            let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
            if state
                .attempted_at
                .is_some_and(|at| at.elapsed() < self.config.min_refresh_interval)
            {
                return;
            }
            state.attempted_at = Some(Instant::now());
        }
        match self.fetch().await {
            Ok(keys) => {
                tracing::info!(url = %self.config.url, keys = keys.len(), "fetched the token signing keys");
                let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
                state.keys = Arc::new(keys);
                state.fetched_at = Some(Instant::now());
            }
            Err(error) => {
                tracing::warn!(url = %self.config.url, error = format!("{error:#}"), "failed to fetch the token signing keys");
            }
        }
    }

    async fn fetch(&self) -> anyhow::Result<KeyMap> {
        let mut response = self
            .client
            .get(&self.config.url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .context("the request failed")?;
        if !response.status().is_success() {
            bail!("the server answered {}", response.status());
        }
        let limit = self.config.max_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            bail!("the key set is larger than {limit} bytes");
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .context("reading the key set failed")?
        {
            if body.len() + chunk.len() > limit {
                bail!("the key set is larger than {limit} bytes");
            }
            body.extend_from_slice(&chunk);
        }
        parse_key_set(&body)
    }
}

/// The usable signing keys of a JWKS document. Keys without a `kid`, meant
/// for encryption, symmetric, or of an algorithm that cannot be verified
/// here are left out; a set with none left is an error.
pub(crate) fn parse_key_set(body: &[u8]) -> anyhow::Result<KeyMap> {
    #[derive(Deserialize)]
    struct RawSet {
        keys: Vec<serde_json::Value>,
    }
    let set: RawSet = serde_json::from_slice(body).context("the key set is not a JWKS document")?;
    let keys: KeyMap = set
        .keys
        .into_iter()
        .filter_map(|raw| serde_json::from_value::<Jwk>(raw).ok())
        .filter_map(|jwk| Some((jwk.common.key_id.clone()?, Arc::new(verifying_key(&jwk)?))))
        .collect();
    if keys.is_empty() {
        bail!("the key set holds no usable signing key");
    }
    Ok(keys)
}

fn verifying_key(jwk: &Jwk) -> Option<VerifyingKey> {
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return None;
    }
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        // A symmetric key published in a set would let anyone who reads the
        // set sign tokens.
        _ => return None,
    };
    let algorithm = match &jwk.common.key_algorithm {
        None => by_type,
        Some(named) => Algorithm::from_str(&named.to_string()).ok()?,
    };
    if matches!(
        algorithm,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    ) {
        return None;
    }
    Some(VerifyingKey {
        decoding: DecodingKey::from_jwk(jwk).ok()?,
        algorithm,
    })
}
