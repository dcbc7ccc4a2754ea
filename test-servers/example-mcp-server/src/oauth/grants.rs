//! The token endpoint's grants: codes, refresh tokens (rotated and raced
//! when asked), client credentials, JWT bearer assertions and token
//! exchanges, each answered with tokens of the realm.

use std::collections::HashMap;

use axum::{http::StatusCode, response::Response};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::{OAuthRealm, json_response};

/// The grant `form` asks for, answered with tokens of the realm (bound to
/// `dpop_key` when the request proved one), or `invalid_grant`.
pub(super) async fn token(
    realm: &OAuthRealm,
    form: &HashMap<String, String>,
    dpop_key: Option<String>,
) -> Response {
    let invalid = || json_response(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant"}));
    let user = match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(code) = form.get("code").and_then(|c| realm.state().codes.remove(c)) else {
                return invalid();
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if challenge != code.challenge || form.get("redirect_uri") != Some(&code.redirect_uri) {
                return invalid();
            }
            code.user
        }
        Some("refresh_token") => match refresh(realm, form.get("refresh_token")).await {
            Some(user) => user,
            None => return invalid(),
        },
        Some("client_credentials") => "client".to_owned(),
        // The subject token's `sub` (a test's caller token, unverified),
        // for the audience asked for.
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
            if realm.state().refuse_exchanges {
                return invalid();
            }
            match form.get("subject_token").and_then(|t| subject(t)) {
                Some(subject) => subject,
                None => return invalid(),
            }
        }
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
            match form.get("assertion").and_then(|a| subject(a)) {
                Some(subject) => subject,
                None => return invalid(),
            }
        }
        _ => {
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({"error": "unsupported_grant_type"}),
            );
        }
    };
    let mut issued = realm.issue(&user);
    // Bound to the proof's key: a DPoP token (RFC 9449 section 5).
    if let (Some(jkt), Some(access)) = (dpop_key, issued["access_token"].as_str()) {
        if let Some(dpop) = realm.state().dpop.as_mut() {
            dpop.bind(access, jkt);
        }
        issued["token_type"] = json!("DPoP");
    }
    // Assertion grants get no refresh token (RFC 7523 section 3.1 advises
    // against one): a new assertion is the way to a new token.
    if form.get("grant_type").map(String::as_str)
        == Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        && let Some(issued) = issued.as_object_mut()
    {
        issued.remove("refresh_token");
    }
    json_response(StatusCode::OK, issued)
}

/// The `sub` claim of a JWT, read without checking its signature.
fn subject(jwt: &str) -> Option<String> {
    let payload = URL_SAFE_NO_PAD.decode(jwt.split('.').nth(1)?).ok()?;
    let claims: Value = serde_json::from_slice(&payload).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

/// The user a refresh token belongs to, once held with the others racing
/// it (when asked); rotated away when rotation is on.
async fn refresh(realm: &OAuthRealm, token: Option<&String>) -> Option<String> {
    let barrier = {
        let mut state = realm.state();
        let barrier = state.refresh_barrier.take();
        match barrier {
            Some((barrier, left)) if left > 1 => {
                state.refresh_barrier = Some((barrier.clone(), left - 1));
                Some(barrier)
            }
            other => other.map(|(barrier, _)| barrier),
        }
    };
    if let Some(barrier) = &barrier {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), barrier.wait()).await;
    }
    let owner = {
        let mut state = realm.state();
        let owner = match token {
            Some(token) if state.rotate_refresh => state.refresh.remove(token),
            Some(token) => state.refresh.get(token).cloned(),
            None => None,
        };
        if owner.is_none() {
            state.refused_refreshes += 1;
        }
        owner
    };
    if owner.is_none() && barrier.is_some() {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    owner
}
