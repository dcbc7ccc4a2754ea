//! A test authorization server beside the MCP endpoint, for servers that use
//! the MCP authorization specification: protected resource metadata,
//! authorization server metadata, dynamic registration, an authorization
//! endpoint that signs in the user named by its `user` parameter at once
//! (standing in for a login page), and a token endpoint for authorization
//! codes (PKCE S256 checked), refresh tokens, client credentials, JWT
//! bearer grants and token exchanges (for the `sub` of the token given). The
//! MCP endpoint then requires one of its access tokens and records whose it
//! was. A test can make it hostile or strict: metadata fields replaced,
//! refresh tokens rotated (a reused one refused), refreshes held until
//! several are in flight, short-lived access tokens.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::{dpop::DpopRealm, http::MCP_PATH};

mod grants;

/// A code waiting to be exchanged.
#[derive(Debug)]
struct Code {
    user: String,
    challenge: String,
    redirect_uri: String,
}

#[derive(Debug, Default)]
struct RealmState {
    base: String,
    next: u64,
    codes: HashMap<String, Code>,
    access: HashMap<String, String>,
    refresh: HashMap<String, String>,
    issued: Vec<String>,
    calls: Vec<String>,
    registrations: usize,
    token_credentials: Vec<String>,
    token_requests: Vec<TokenRequest>,
    metadata: serde_json::Map<String, Value>,
    rotate_refresh: bool,
    refused_refreshes: usize,
    access_lifetime: Option<u64>,
    refresh_barrier: Option<(Arc<tokio::sync::Barrier>, usize)>,
    presented: Vec<String>,
    presented_proofs: Vec<String>,
    refuse_exchanges: bool,
    dpop: Option<DpopRealm>,
}

/// One request the token endpoint received.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// Its `Authorization` header.
    pub authorization: Option<String>,
    /// Its form fields.
    pub form: HashMap<String, String>,
    /// Its `DPoP` proof header.
    pub dpop: Option<String>,
}

/// The authorization server's state: issued tokens and whose they are,
/// and the user behind every authorized MCP request.
#[derive(Debug, Clone, Default)]
pub struct OAuthRealm(Arc<Mutex<RealmState>>);

impl OAuthRealm {
    fn state(&self) -> MutexGuard<'_, RealmState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_base(&self, base: String) {
        self.state().base = base;
    }

    /// The user behind each authorized MCP request, in order.
    pub fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    /// Every access and refresh token issued so far.
    pub fn issued_tokens(&self) -> Vec<String> {
        self.state().issued.clone()
    }

    /// How many clients registered dynamically.
    pub fn registrations(&self) -> usize {
        self.state().registrations
    }

    /// The client credentials (an `Authorization` header or a
    /// `client_secret` field) each token request carried, in order.
    pub fn token_credentials(&self) -> Vec<String> {
        self.state().token_credentials.clone()
    }

    /// Every request the token endpoint received, in order.
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        self.state().token_requests.clone()
    }

    /// Every `Authorization` header the MCP endpoint received, in order.
    pub fn presented(&self) -> Vec<String> {
        self.state().presented.clone()
    }

    /// Binds tokens with DPoP (RFC 9449): the metadata lists ES256, a
    /// token request needs a proof, its tokens are bound to the proof's key
    /// and the MCP endpoint accepts them only as DPoP tokens with a proof;
    /// with `nonces`, both require their nonce.
    pub fn require_dpop(&self, nonces: bool) {
        let mut state = self.state();
        state.dpop = Some(DpopRealm::new(nonces));
        state
            .metadata
            .insert("dpop_signing_alg_values_supported".into(), json!(["ES256"]));
    }

    /// Both servers require new DPoP nonces from now on.
    pub fn rotate_dpop_nonces(&self) {
        if let Some(dpop) = self.state().dpop.as_mut() {
            dpop.rotate_nonces();
        }
    }

    /// Every DPoP check from now on requires a nonce never given before,
    /// so none passes (a hostile server).
    pub fn refuse_every_dpop_nonce(&self) {
        if let Some(dpop) = self.state().dpop.as_mut() {
            dpop.refuse_every_nonce();
        }
    }

    /// The DPoP checks' outcomes other than success, in order:
    /// `as-nonce`, `rs-nonce` (a nonce asked for), `as-invalid:<why>`,
    /// `rs-invalid:<why>` (a proof refused), `rs-bearer` (a bound token
    /// presented as a bearer token).
    pub fn dpop_events(&self) -> Vec<String> {
        self.state()
            .dpop
            .as_ref()
            .map(DpopRealm::events)
            .unwrap_or_default()
    }

    /// Every `DPoP` proof header the MCP endpoint received, in order.
    pub fn presented_proofs(&self) -> Vec<String> {
        self.state().presented_proofs.clone()
    }

    /// Refuses every token exchange with `invalid_grant`.
    pub fn refuse_exchanges(&self) {
        self.state().refuse_exchanges = true;
    }

    /// The URL the server is served at (its issuer).
    pub fn base(&self) -> String {
        self.state().base.clone()
    }

    /// Replaces a field of the authorization server metadata (a hostile
    /// server naming its own endpoints).
    pub fn set_metadata(&self, field: &str, value: Value) {
        self.state().metadata.insert(field.to_owned(), value);
    }

    /// Rotates refresh tokens: each is good for one refresh, a reused one
    /// is refused with `invalid_grant`.
    pub fn rotate_refresh_tokens(&self) {
        self.state().rotate_refresh = true;
    }

    /// How many refreshes were refused.
    pub fn refused_refreshes(&self) -> usize {
        self.state().refused_refreshes
    }

    /// Access tokens say they live `seconds`.
    pub fn set_access_lifetime(&self, seconds: u64) {
        self.state().access_lifetime = Some(seconds);
    }

    /// Holds the next `count` refresh requests until all have arrived (at
    /// most 10 s), so that they race; a refused one is answered 300 ms after.
    pub fn hold_refreshes(&self, count: usize) {
        self.state().refresh_barrier = Some((Arc::new(tokio::sync::Barrier::new(count)), count));
    }

    /// Revokes `user`'s access and refresh tokens, as a user disconnecting
    /// the application at the provider does.
    pub fn revoke(&self, user: &str) {
        let mut state = self.state();
        state.access.retain(|_, owner| owner != user);
        state.refresh.retain(|_, owner| owner != user);
    }

    /// Ends `user`'s access tokens (their refresh tokens still work).
    pub fn expire_access(&self, user: &str) {
        self.state().access.retain(|_, owner| owner != user);
    }

    fn issue(&self, user: &str) -> Value {
        let mut state = self.state();
        state.next += 1;
        let n = state.next;
        let access = format!("at-{n}-{user}-{}", uuid_like(n));
        let refresh = format!("rt-{n}-{user}-{}", uuid_like(n));
        state.access.insert(access.clone(), user.to_owned());
        state.refresh.insert(refresh.clone(), user.to_owned());
        state.issued.extend([access.clone(), refresh.clone()]);
        json!({
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": state.access_lifetime.unwrap_or(3600),
        })
    }
}

/// Something unguessable enough for a test token.
fn uuid_like(n: u64) -> String {
    let digest = Sha256::digest(format!("{n}:{:?}", std::time::SystemTime::now()));
    URL_SAFE_NO_PAD.encode(&digest[..12])
}

fn form(bytes: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Serves the authorization server's endpoints; anything else goes on to
/// the MCP endpoint, which needs a live access token.
pub(crate) async fn guard(
    State(realm): State<OAuthRealm>,
    request: Request,
    next: Next,
) -> Response {
    let base = realm.state().base.clone();
    let path = request.uri().path().to_owned();
    let query = form(request.uri().query().unwrap_or_default().as_bytes());
    match path.as_str() {
        p if p.starts_with("/.well-known/oauth-protected-resource") => json_response(
            StatusCode::OK,
            json!({"resource": format!("{base}{MCP_PATH}"), "authorization_servers": [base]}),
        ),
        "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration" => {
            let mut metadata = json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
                    "scopes_supported": ["mcp", "offline_access"],
            });
            for (field, value) in &realm.state().metadata {
                metadata[field] = value.clone();
            }
            json_response(StatusCode::OK, metadata)
        }
        "/register" => {
            realm.state().registrations += 1;
            let body = axum::body::to_bytes(request.into_body(), 64 * 1024)
                .await
                .unwrap_or_default();
            let mut registered: Value = serde_json::from_slice(&body).unwrap_or_else(|_| json!({}));
            registered["client_id"] = json!(format!("client-{}", uuid_like(0)));
            registered["token_endpoint_auth_method"] = json!("none");
            json_response(StatusCode::CREATED, registered)
        }
        "/authorize" => authorize(&realm, &base, &query),
        "/token" => token_endpoint(&realm, &base, request).await,
        _ => mcp(&realm, &base, request, next).await,
    }
}

/// The token endpoint: the request recorded, its DPoP proof checked when
/// tokens are bound, then the grant.
async fn token_endpoint(realm: &OAuthRealm, base: &str, request: Request) -> Response {
    let proof = header_text(&request, "dpop");
    let basic = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = axum::body::to_bytes(request.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let form = form(&body);
    realm.state().token_requests.push(TokenRequest {
        authorization: basic.clone(),
        form: form.clone(),
        dpop: proof.clone(),
    });
    let seen = basic.or_else(|| form.get("client_secret").cloned());
    realm.state().token_credentials.extend(seen);
    // The proof before the grant: a code is spent only once.
    let jkt = match realm.state().dpop.as_mut() {
        Some(dpop) => match dpop.token_proof(proof.as_deref(), &format!("{base}/token")) {
            Ok(jkt) => Some(jkt),
            Err(refused) => return *refused,
        },
        None => None,
    };
    grants::token(realm, &form, jkt).await
}

fn authorize(realm: &OAuthRealm, base: &str, query: &HashMap<String, String>) -> Response {
    let (Some(user), Some(redirect_uri), Some(state), Some(challenge)) = (
        query.get("user"),
        query.get("redirect_uri"),
        query.get("state"),
        query.get("code_challenge"),
    ) else {
        return json_response(StatusCode::BAD_REQUEST, json!({"error": "invalid_request"}));
    };
    let code = format!("code-{}", uuid_like(1));
    realm.state().codes.insert(
        code.clone(),
        Code {
            user: user.clone(),
            challenge: challenge.clone(),
            redirect_uri: redirect_uri.clone(),
        },
    );
    let Ok(mut location) = url::Url::parse(redirect_uri) else {
        return json_response(StatusCode::BAD_REQUEST, json!({"error": "invalid_request"}));
    };
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", state)
        .append_pair("iss", base);
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(value) = HeaderValue::from_str(location.as_str()) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// A request header as text.
fn header_text(request: &Request, name: &str) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

async fn mcp(realm: &OAuthRealm, base: &str, request: Request<Body>, next: Next) -> Response {
    let authorization = header_text(&request, header::AUTHORIZATION.as_str());
    let proof = header_text(&request, "dpop");
    {
        let mut state = realm.state();
        state.presented.extend(authorization.clone());
        state.presented_proofs.extend(proof.clone());
    }
    let url = format!("{base}{}", request.uri().path());
    let proven = match realm.state().dpop.as_mut() {
        Some(dpop) => dpop.resource_proof(
            request.method().as_str(),
            &url,
            authorization.as_deref(),
            proof.as_deref(),
        ),
        None => Ok(None),
    };
    let token = match proven {
        Ok(Some(token)) => Some(token),
        Ok(None) => authorization
            .as_deref()
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::to_owned),
        Err(refused) => return *refused,
    };
    let user = token.and_then(|token| realm.state().access.get(&token).cloned());
    let Some(user) = user else {
        let challenge = format!(
            "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource{MCP_PATH}\", scope=\"mcp\""
        );
        let mut response = StatusCode::UNAUTHORIZED.into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        return response;
    };
    realm.state().calls.push(user);
    next.run(request).await
}
