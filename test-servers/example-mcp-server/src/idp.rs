//! A test enterprise identity provider for enterprise-managed
//! authorization: its token endpoint exchanges an ID token (OAuth 2.0 Token
//! Exchange) for an identity assertion (`oauth-id-jag+jwt`) naming the ID
//! token's subject, addressed to the audience asked for and bound to the
//! resource and client asked for, and records every request. Signatures are
//! neither made nor checked: the assertion's last segment is a placeholder,
//! which the example server's authorization server accepts.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::Context as _;
use axum::{
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use tokio::{net::TcpListener, task::JoinHandle};

use crate::oauth::TokenRequest;

#[derive(Debug, Default)]
struct IdpState {
    issuer: String,
    client_id: String,
    requests: Vec<TokenRequest>,
    next: u64,
}

/// A running identity provider; stops when dropped.
#[derive(Debug)]
pub struct RunningIdentityProvider {
    /// The address it listens on.
    pub addr: SocketAddr,
    state: Arc<Mutex<IdpState>>,
    task: JoinHandle<()>,
}

impl Drop for RunningIdentityProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RunningIdentityProvider {
    /// Its issuer.
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its token endpoint.
    pub fn token_url(&self) -> String {
        format!("{}/token", self.issuer())
    }

    /// Every request its token endpoint received, in order.
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .requests
            .clone()
    }
}

/// Starts an identity provider on a loopback port whose assertions name
/// `client_id` (the client registered at the MCP server's authorization
/// server).
pub async fn spawn_identity_provider(client_id: &str) -> anyhow::Result<RunningIdentityProvider> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the identity provider")?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let state = Arc::new(Mutex::new(IdpState {
        issuer: format!("http://{addr}"),
        client_id: client_id.to_owned(),
        ..IdpState::default()
    }));
    let router = axum::Router::new()
        .route("/token", axum::routing::post(token))
        .with_state(Arc::clone(&state));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(RunningIdentityProvider { addr, state, task })
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The claims of a JWT, unverified.
fn claims(jwt: &str) -> Option<Value> {
    let payload = URL_SAFE_NO_PAD.decode(jwt.split('.').nth(1)?).ok()?;
    serde_json::from_slice(&payload).ok()
}

async fn token(
    State(state): State<Arc<Mutex<IdpState>>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    state.requests.push(TokenRequest {
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        form: form.clone(),
        dpop: None,
    });
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    let subject = claims(field("subject_token"))
        .and_then(|c| c.get("sub").and_then(Value::as_str).map(str::to_owned));
    let (Some(subject), "urn:ietf:params:oauth:grant-type:token-exchange") =
        (subject, field("grant_type"))
    else {
        return json_response(StatusCode::BAD_REQUEST, &json!({"error": "invalid_grant"}));
    };
    state.next += 1;
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","typ":"oauth-id-jag+jwt"}"#);
    let payload = URL_SAFE_NO_PAD.encode(
        json!({
            "iss": state.issuer,
            "sub": subject,
            "aud": field("audience"),
            "client_id": state.client_id,
            "resource": field("resource"),
            "jti": format!("jag-{}", state.next),
            "iat": now(),
            "exp": now() + 300,
        })
        .to_string(),
    );
    let assertion = format!("{header}.{payload}.{}", URL_SAFE_NO_PAD.encode("signature"));
    json_response(
        StatusCode::OK,
        &json!({
            "access_token": assertion,
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
            "expires_in": 300,
        }),
    )
}
