//! DPoP (RFC 9449) as the test authorization server and MCP endpoint check
//! it, when a test asks for DPoP-bound tokens: a proof is an ES256 JWT whose
//! header carries the public key, signed by it, naming the request's method
//! and URL, made within the last five minutes, never seen before, with the
//! server's nonce when the server requires one and, towards the MCP
//! endpoint, the hash of the token presented; the token's key thumbprint
//! must be the proof's.

use std::collections::HashSet;

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// How far a proof's `iat` may be from now.
const IAT_WINDOW_SECS: u64 = 300;

/// What the checks of a proof need besides the proof.
#[derive(Debug)]
pub(crate) struct Expected<'a> {
    /// The request's method.
    pub method: &'a str,
    /// The request's URL without query.
    pub url: &'a str,
    /// The nonce the server requires, if any.
    pub nonce: Option<&'a str>,
    /// The access token presented (towards the MCP endpoint).
    pub access_token: Option<&'a str>,
}

/// Why a proof was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The proof lacks the server's nonce or names another.
    Nonce,
    /// The proof is missing or wrong, for the reason given.
    Invalid(String),
}

fn part(jwt: &str, index: usize) -> Option<Value> {
    let bytes = URL_SAFE_NO_PAD.decode(jwt.split('.').nth(index)?).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The RFC 7638 thumbprint of an EC public key.
pub(crate) fn thumbprint(jwk: &Value) -> String {
    let canonical = format!(
        r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["crv"].as_str().unwrap_or_default(),
        jwk["x"].as_str().unwrap_or_default(),
        jwk["y"].as_str().unwrap_or_default()
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// Checks `proof` against `expected`, recording its `jti` in `seen`; the
/// thumbprint of its key when it is good.
pub(crate) fn check(
    proof: Option<&str>,
    expected: &Expected<'_>,
    seen: &mut HashSet<String>,
) -> Result<String, Refusal> {
    let invalid = |why: &str| Err(Refusal::Invalid(why.to_owned()));
    let Some(proof) = proof else {
        return invalid("no DPoP proof");
    };
    let (Some(header), Some(claims)) = (part(proof, 0), part(proof, 1)) else {
        return invalid("not a JWT");
    };
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" {
        return invalid("typ or alg");
    }
    let jwk = &header["jwk"];
    if jwk.get("d").is_some() || jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return invalid("jwk");
    }
    if !signed_by(proof, jwk) {
        return invalid("signature");
    }
    if claims["htm"] != expected.method {
        return invalid("htm");
    }
    if claims["htu"] != expected.url {
        return invalid("htu");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    if claims["iat"]
        .as_u64()
        .is_none_or(|iat| iat.abs_diff(now) > IAT_WINDOW_SECS)
    {
        return invalid("iat");
    }
    if let Some(token) = expected.access_token {
        let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
        if claims["ath"] != ath.as_str() {
            return invalid("ath");
        }
    }
    let Some(jti) = claims["jti"].as_str() else {
        return invalid("jti");
    };
    if let Some(nonce) = expected.nonce
        && claims["nonce"] != nonce
    {
        return Err(Refusal::Nonce);
    }
    if !seen.insert(jti.to_owned()) {
        return invalid("replayed jti");
    }
    Ok(thumbprint(jwk))
}

fn signed_by(proof: &str, jwk: &Value) -> bool {
    let coordinate = |name: &str| {
        jwk[name]
            .as_str()
            .and_then(|c| URL_SAFE_NO_PAD.decode(c).ok())
    };
    let (Some(x), Some(y)) = (coordinate("x"), coordinate("y")) else {
        return false;
    };
    let mut point = vec![4u8];
    point.extend(x);
    point.extend(y);
    let Some((input, signature)) = proof.rsplit_once('.') else {
        return false;
    };
    let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
        return false;
    };
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(input.as_bytes(), &signature)
        .is_ok()
}

/// The DPoP side of the test realm: the nonces required, the proofs seen,
/// which tokens are bound to which key, and every refusal.
#[derive(Debug, Default)]
pub(crate) struct DpopRealm {
    /// The nonce the token endpoint requires, if any.
    as_nonce: Option<String>,
    /// The nonce the MCP endpoint requires, if any.
    rs_nonce: Option<String>,
    /// Each check requires a nonce never given before (so none passes).
    new_nonce_every_time: bool,
    nonces_made: u64,
    seen: HashSet<String>,
    /// Access token → the thumbprint of the key it is bound to.
    bound: std::collections::HashMap<String, String>,
    /// What happened, in order: `as-nonce`, `rs-nonce`, `as-invalid:<why>`,
    /// `rs-invalid:<why>`, `rs-bearer`.
    events: Vec<String>,
}

/// An axum response of `status` with `headers` and a JSON body.
fn refusal(status: StatusCode, headers: &[(&'static str, String)], body: Value) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, value);
        }
    }
    response
}

impl DpopRealm {
    /// Requires DPoP; with `nonces`, a nonce at both servers.
    pub(crate) fn new(nonces: bool) -> Self {
        Self {
            as_nonce: nonces.then(|| "as-nonce-0".to_owned()),
            rs_nonce: nonces.then(|| "rs-nonce-0".to_owned()),
            ..Self::default()
        }
    }

    /// Both servers require new nonces from now on.
    pub(crate) fn rotate_nonces(&mut self) {
        self.nonces_made += 1;
        let n = self.nonces_made;
        self.as_nonce = Some(format!("as-nonce-{n}"));
        self.rs_nonce = Some(format!("rs-nonce-{n}"));
    }

    /// Every check from now on requires a nonce never given before.
    pub(crate) fn refuse_every_nonce(&mut self) {
        self.new_nonce_every_time = true;
    }

    /// What happened, in order.
    pub(crate) fn events(&self) -> Vec<String> {
        self.events.clone()
    }

    fn required(&mut self, at_token_endpoint: bool) -> Option<String> {
        if self.new_nonce_every_time {
            self.rotate_nonces();
        }
        if at_token_endpoint {
            self.as_nonce.clone()
        } else {
            self.rs_nonce.clone()
        }
    }

    /// Checks a token request's proof: the key thumbprint to bind the
    /// token to, or the refusal to answer with.
    pub(crate) fn token_proof(
        &mut self,
        proof: Option<&str>,
        token_url: &str,
    ) -> Result<String, Box<Response>> {
        let nonce = self.required(true);
        let expected = Expected {
            method: "POST",
            url: token_url,
            nonce: nonce.as_deref(),
            access_token: None,
        };
        match check(proof, &expected, &mut self.seen) {
            Ok(jkt) => Ok(jkt),
            Err(Refusal::Nonce) => {
                self.events.push("as-nonce".into());
                Err(Box::new(refusal(
                    StatusCode::BAD_REQUEST,
                    &[("dpop-nonce", nonce.unwrap_or_default())],
                    json!({"error": "use_dpop_nonce"}),
                )))
            }
            Err(Refusal::Invalid(why)) => {
                self.events.push(format!("as-invalid:{why}"));
                Err(Box::new(refusal(
                    StatusCode::BAD_REQUEST,
                    &[],
                    json!({"error": "invalid_dpop_proof"}),
                )))
            }
        }
    }

    /// Binds `token` to the key of thumbprint `jkt`.
    pub(crate) fn bind(&mut self, token: &str, jkt: String) {
        self.bound.insert(token.to_owned(), jkt);
    }

    /// Checks an MCP request's token and proof: the DPoP token it proves,
    /// `None` for an unbound bearer token (or none), or the refusal.
    pub(crate) fn resource_proof(
        &mut self,
        method: &str,
        url: &str,
        authorization: Option<&str>,
        proof: Option<&str>,
    ) -> Result<Option<String>, Box<Response>> {
        let unauthorized = |events: &mut Vec<String>, event: String, error: &str| {
            events.push(event);
            refusal(
                StatusCode::UNAUTHORIZED,
                &[("www-authenticate", format!("DPoP error=\"{error}\""))],
                json!({"error": error}),
            )
        };
        let Some(authorization) = authorization else {
            return Ok(None);
        };
        if let Some(token) = authorization.strip_prefix("Bearer ") {
            if self.bound.contains_key(token) {
                return Err(Box::new(unauthorized(
                    &mut self.events,
                    "rs-bearer".into(),
                    "invalid_token",
                )));
            }
            return Ok(None);
        }
        let Some(token) = authorization.strip_prefix("DPoP ") else {
            return Ok(None);
        };
        let Some(jkt) = self.bound.get(token).cloned() else {
            let event = "rs-invalid:unbound token".to_owned();
            return Err(Box::new(unauthorized(
                &mut self.events,
                event,
                "invalid_token",
            )));
        };
        let nonce = self.required(false);
        let expected = Expected {
            method,
            url,
            nonce: nonce.as_deref(),
            access_token: Some(token),
        };
        match check(proof, &expected, &mut self.seen) {
            Ok(proven) if proven == jkt => Ok(Some(token.to_owned())),
            Ok(_) => Err(Box::new(unauthorized(
                &mut self.events,
                "rs-invalid:key".into(),
                "invalid_dpop_proof",
            ))),
            Err(Refusal::Nonce) => {
                let mut response =
                    unauthorized(&mut self.events, "rs-nonce".into(), "use_dpop_nonce");
                if let Some(value) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
                    response.headers_mut().insert("dpop-nonce", value);
                }
                Err(Box::new(response))
            }
            Err(Refusal::Invalid(why)) => Err(Box::new(unauthorized(
                &mut self.events,
                format!("rs-invalid:{why}"),
                "invalid_dpop_proof",
            ))),
        }
    }
}
