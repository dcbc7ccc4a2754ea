//! Tokens verified with the keys of an identity provider's JWKS, served by a
//! real HTTP server the test starts and changes (rotation, failures, limits).
//! The private keys under `keys/` exist only for these tests.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use axum::{Router, extract::State, http::StatusCode, routing::get};
use serde_json::{Value, json};
use switchboard_auth::{
    Algorithm, AuthError, Authenticator, EncodingKey, JwksConfig, JwtKey, TokenMinter,
    VerifierConfig,
};

const ISSUER: &str = "https://idp.example";
const AUDIENCE: &str = "switchboard";

/// What the JWKS server answers, changed by the test as it goes.
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    body: String,
    delay: Duration,
}

#[derive(Clone)]
struct Provider {
    answer: Arc<Mutex<Answer>>,
    fetches: Arc<AtomicUsize>,
}

impl Provider {
    fn publish(&self, keys: &[&str]) {
        let keys: Vec<Value> = keys.iter().map(|k| public_jwk(k)).collect();
        self.answer_with(StatusCode::OK, json!({ "keys": keys }).to_string());
    }

    fn answer_with(&self, status: StatusCode, body: String) {
        let mut answer = self.answer.lock().expect("not poisoned");
        answer.status = status;
        answer.body = body;
    }

    fn delay(&self, delay: Duration) {
        self.answer.lock().expect("not poisoned").delay = delay;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

async fn serve_jwks(State(provider): State<Provider>) -> (StatusCode, String) {
    provider.fetches.fetch_add(1, Ordering::SeqCst);
    let answer = provider.answer.lock().expect("not poisoned").clone();
    tokio::time::sleep(answer.delay).await;
    (answer.status, answer.body)
}

/// Starts a JWKS server publishing `keys`; returns it and its URL.
async fn start_provider(keys: &[&str]) -> (Provider, String) {
    let provider = Provider {
        answer: Arc::new(Mutex::new(Answer {
            status: StatusCode::OK,
            body: String::new(),
            delay: Duration::ZERO,
        })),
        fetches: Arc::new(AtomicUsize::new(0)),
    };
    provider.publish(keys);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!(
        "http://{}/.well-known/jwks.json",
        listener.local_addr().expect("bound")
    );
    let app = Router::new()
        .route("/.well-known/jwks.json", get(serve_jwks))
        .with_state(provider.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (provider, url)
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/it/keys/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn public_jwk(kid: &str) -> Value {
    serde_json::from_str(&fixture(&format!("{kid}.jwk.json"))).expect("a JWK fixture")
}

fn minter(kid: &str) -> TokenMinter {
    let pem = fixture(&format!("{kid}.pem"));
    let (algorithm, key) = if kid.starts_with("ec") {
        (Algorithm::ES256, EncodingKey::from_ec_pem(pem.as_bytes()))
    } else {
        (Algorithm::RS256, EncodingKey::from_rsa_pem(pem.as_bytes()))
    };
    TokenMinter::new(algorithm, key.expect("a private key fixture")).with_key_id(kid)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// A token as a cluster's identity provider issues it, signed by `kid`.
fn token(kid: &str) -> String {
    minter(kid)
        .mint(&json!({
            "iss": ISSUER, "aud": ["kubernetes", AUDIENCE], "sub": "alice",
            "org": "acme", "roles": ["admin"], "exp": now() + 600, "iat": now(),
        }))
        .expect("mints")
}

fn verifier(jwks: JwksConfig) -> Authenticator {
    let mut config = VerifierConfig::with_key(JwtKey::Jwks(jwks));
    config.issuer = Some(ISSUER.into());
    config.audience = Some(AUDIENCE.into());
    Authenticator::new(&config).expect("valid config")
}

/// Bounds that let a test fetch as often as it needs.
fn eager(url: &str) -> JwksConfig {
    JwksConfig {
        min_refresh_interval: Duration::ZERO,
        ..JwksConfig::new(url)
    }
}

/// Waits for the server to have answered `count` fetches (a background
/// refresh), failing after a generous bound.
async fn wait_for_fetches(provider: &Provider, count: usize) {
    let start = Instant::now();
    while provider.fetches() < count {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "expected {count} fetches, saw {}",
            provider.fetches()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn tokens_signed_by_published_rsa_and_ec_keys_verify() {
    let (provider, url) = start_provider(&["rsa-a", "ec-a"]).await;
    let verifier = verifier(JwksConfig::new(&url));
    for kid in ["rsa-a", "ec-a"] {
        let principal = verifier.authenticate(&token(kid)).await.expect(kid);
        assert_eq!(
            (principal.org_id.as_str(), principal.user_id.as_str()),
            ("acme", "alice")
        );
        assert!(principal.is_admin());
    }
    assert_eq!(provider.fetches(), 1, "the set is fetched once and cached");
}

#[tokio::test]
async fn a_token_from_another_issuer_audience_or_key_is_refused() {
    let (_provider, url) = start_provider(&["rsa-a"]).await;
    let verifier = verifier(eager(&url));
    let signed = |claims: Value| minter("rsa-a").mint(&claims).expect("mints");
    let base = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "u", "org": "o", "exp": now() + 600});
    assert!(verifier.authenticate(&signed(base.clone())).await.is_ok());
    for (field, value) in [
        ("iss", json!("https://evil.example")),
        ("aud", json!(["other"])),
    ] {
        let mut claims = base.clone();
        claims[field] = value;
        assert_eq!(
            verifier.authenticate(&signed(claims)).await,
            Err(AuthError::Invalid),
            "{field}"
        );
    }
    // Signed by a key the provider does not publish, under a published kid.
    let forged = TokenMinter::new(
        Algorithm::RS256,
        EncodingKey::from_rsa_pem(fixture("rsa-b.pem").as_bytes()).expect("key"),
    )
    .with_key_id("rsa-a")
    .mint(&base)
    .expect("mints");
    assert_eq!(
        verifier.authenticate(&forged).await,
        Err(AuthError::Invalid)
    );
    // No kid: a key set is searched by it only.
    let anonymous = TokenMinter::new(
        Algorithm::RS256,
        EncodingKey::from_rsa_pem(fixture("rsa-a.pem").as_bytes()).expect("key"),
    )
    .mint(&base)
    .expect("mints");
    assert_eq!(
        verifier.authenticate(&anonymous).await,
        Err(AuthError::Invalid)
    );
}

#[tokio::test]
async fn a_key_rotated_in_is_fetched_when_a_token_names_it() {
    let (provider, url) = start_provider(&["rsa-a"]).await;
    let verifier = verifier(eager(&url));
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    provider.publish(&["rsa-a", "rsa-b"]);
    assert!(verifier.authenticate(&token("rsa-b")).await.is_ok());
    assert_eq!(provider.fetches(), 2);
}

#[tokio::test]
async fn unknown_key_ids_fetch_at_most_once_per_minimum_interval() {
    let (provider, url) = start_provider(&["rsa-a"]).await;
    let verifier = verifier(JwksConfig {
        min_refresh_interval: Duration::from_secs(3600),
        ..JwksConfig::new(&url)
    });
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    provider.publish(&["rsa-a", "rsa-b"]);
    for _ in 0..20 {
        assert_eq!(
            verifier.authenticate(&token("rsa-b")).await,
            Err(AuthError::Invalid)
        );
    }
    assert_eq!(provider.fetches(), 1);
}

#[tokio::test]
async fn an_old_set_is_refreshed_in_the_background_and_retired_keys_stop_verifying() {
    let (provider, url) = start_provider(&["rsa-a"]).await;
    let verifier = verifier(JwksConfig {
        refresh_interval: Duration::from_millis(1),
        ..eager(&url)
    });
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    provider.publish(&["rsa-b"]);
    tokio::time::sleep(Duration::from_millis(2)).await;
    // The held key still answers while the refresh runs behind the call.
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    wait_for_fetches(&provider, 2).await;
    assert!(verifier.authenticate(&token("rsa-b")).await.is_ok());
    assert_eq!(
        verifier.authenticate(&token("rsa-a")).await,
        Err(AuthError::Invalid)
    );
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_keys_held() {
    let (provider, url) = start_provider(&["rsa-a"]).await;
    let verifier = verifier(JwksConfig {
        refresh_interval: Duration::from_millis(1),
        ..eager(&url)
    });
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    provider.answer_with(StatusCode::INTERNAL_SERVER_ERROR, "down".into());
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    wait_for_fetches(&provider, 2).await;
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
}

#[tokio::test]
async fn an_unreachable_oversized_slow_or_useless_set_makes_calls_unavailable() {
    let (provider, url) = start_provider(&["rsa-a"]).await;
    let bounded = JwksConfig {
        max_bytes: 4096,
        timeout: Duration::from_millis(300),
        ..eager(&url)
    };
    let cases: [(&str, StatusCode, String); 4] = [
        ("error status", StatusCode::SERVICE_UNAVAILABLE, String::new()),
        ("oversized", StatusCode::OK, " ".repeat(8192)),
        ("not a key set", StatusCode::OK, "{\"keys\": 7}".into()),
        (
            "only a symmetric key",
            StatusCode::OK,
            json!({"keys": [{"kty": "oct", "kid": "rsa-a", "alg": "HS256", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQ"}]})
                .to_string(),
        ),
    ];
    for (case, status, body) in cases {
        provider.answer_with(status, body);
        let verifier = verifier(bounded.clone());
        assert_eq!(
            verifier.authenticate(&token("rsa-a")).await,
            Err(AuthError::KeysUnavailable),
            "{case}"
        );
    }
    provider.publish(&["rsa-a"]);
    provider.delay(Duration::from_secs(5));
    let verifier = verifier(bounded.clone());
    assert_eq!(
        verifier.authenticate(&token("rsa-a")).await,
        Err(AuthError::KeysUnavailable),
        "slow"
    );
    provider.delay(Duration::ZERO);
    assert!(
        verifier.authenticate(&token("rsa-a")).await.is_ok(),
        "recovered"
    );
}

#[tokio::test]
async fn an_hs256_token_naming_a_published_key_is_refused() {
    // The public key is known to everyone: were it accepted as an HMAC
    // secret, anyone could sign tokens with it.
    let (_provider, url) = start_provider(&["rsa-a"]).await;
    let verifier = verifier(eager(&url));
    assert!(verifier.authenticate(&token("rsa-a")).await.is_ok());
    let forged = TokenMinter::hs256(&fixture("rsa-a.jwk.json"))
        .with_key_id("rsa-a")
        .mint(&json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "u", "org": "o", "exp": now() + 600}))
        .expect("mints");
    assert_eq!(
        verifier.authenticate(&forged).await,
        Err(AuthError::Invalid)
    );
}

#[test]
fn a_jwks_url_must_be_http() {
    for url in ["file:///etc/passwd", "not a url"] {
        let config = VerifierConfig::with_key(JwtKey::Jwks(JwksConfig::new(url)));
        assert!(
            matches!(Authenticator::new(&config), Err(AuthError::Key(_))),
            "{url}"
        );
    }
}
