//! The body and client authentication of a token request for an
//! integration that authenticates as itself: the client secret in HTTP Basic
//! or in the body, a client assertion signed with its private key
//! (`private_key_jwt`, RFC 7523 section 2.2), or the service's workload
//! identity token as the grant itself (RFC 7523 section 2.1).
//!
//! The workload identity token is a file the platform rotates (a Kubernetes
//! projected service-account token), so it is read for every request, up to
//! a bound, and sent only to an authorization server its `aud` claim names:
//! a tenant cannot point the service's own identity at a server of their
//! choosing.

use std::{
    path::PathBuf,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::Header;
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;

use crate::{domain::oauth_input::signing_key, outbound::oauth::client::same_issuer};

/// `grant_type` of the JWT bearer grant.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of a token exchange (RFC 8693).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OAuth access token (RFC 8693 section 3).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// `client_assertion_type` of a JWT client assertion.
const JWT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long a client assertion is good for: one request.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(60);
/// Default bound on the workload identity token file.
pub const DEFAULT_MAX_WORKLOAD_TOKEN_BYTES: usize = 16 * 1024;

/// What the service proves itself with at the token endpoint.
#[derive(Debug)]
pub enum Credential<'a> {
    /// `client_secret_basic`.
    SecretBasic(&'a SecretString),
    /// `client_secret_post`.
    SecretPost(&'a SecretString),
    /// `private_key_jwt`: a PEM private key and its algorithm.
    PrivateKeyJwt {
        /// The PEM key.
        key: &'a SecretString,
        /// The algorithm's name (`ES256`, ...).
        algorithm: &'a str,
    },
    /// The workload identity token as a JWT bearer grant.
    WorkloadIdentity,
}

/// Where the workload identity token is read from, and up to how many bytes.
#[derive(Debug, Clone)]
pub struct WorkloadToken {
    /// The token file; `None` when the operator configured none.
    pub file: Option<PathBuf>,
    /// The largest token read.
    pub max_bytes: usize,
}

impl Default for WorkloadToken {
    fn default() -> Self {
        Self {
            file: None,
            max_bytes: DEFAULT_MAX_WORKLOAD_TOKEN_BYTES,
        }
    }
}

impl WorkloadToken {
    /// The token as the file holds it now.
    async fn read(&self) -> Result<SecretString, String> {
        let path = self.file.as_ref().ok_or(
            "workload identity is not configured (SWITCHBOARD_WORKLOAD_IDENTITY_TOKEN_FILE)",
        )?;
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| format!("the workload identity token cannot be read: {}", e.kind()))?;
        let mut bytes = Vec::new();
        let limit = u64::try_from(self.max_bytes).unwrap_or(u64::MAX);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| format!("the workload identity token cannot be read: {}", e.kind()))?;
        if bytes.len() > self.max_bytes {
            return Err(format!(
                "the workload identity token is larger than {} bytes",
                self.max_bytes
            ));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| "the workload identity token is not text".to_owned())?;
        let token = text.trim();
        if token.is_empty() {
            return Err("the workload identity token file is empty".into());
        }
        Ok(SecretString::from(token.to_owned()))
    }
}

/// The audiences (`aud`) a JWT names, read without checking its signature
/// (the authorization server checks that): a string or a list of them.
fn audiences(jwt: &str) -> Vec<String> {
    let claims = jwt
        .split('.')
        .nth(1)
        .and_then(|payload| URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    match claims.as_ref().and_then(|c| c.get("aud")) {
        Some(Value::String(aud)) => vec![aud.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A token request ready to send: its form fields and, for
/// `client_secret_basic`, the client id and secret.
pub struct TokenRequest {
    /// The form fields.
    pub form: Vec<(&'static str, String)>,
    /// HTTP Basic credentials.
    pub basic: Option<(String, SecretString)>,
}

impl std::fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets and assertions travel in the form: names only.
        f.debug_struct("TokenRequest")
            .field(
                "form",
                &self.form.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Everything a token request is made of besides the credential.
#[derive(Debug)]
pub struct Target<'a> {
    /// The client id (may be empty with workload identity).
    pub client_id: &'a str,
    /// The authorization server's issuer, when known (discovered or pinned).
    pub issuer: Option<&'a str>,
    /// The token endpoint.
    pub token_url: &'a str,
    /// The MCP server the token is for (RFC 8707 `resource`).
    pub resource: &'a str,
    /// Requested scopes.
    pub scopes: &'a [String],
}

impl Target<'_> {
    /// Who a client assertion is addressed to: the issuer, else the token
    /// endpoint (both are what RFC 7523 allows).
    fn audience(&self) -> &str {
        self.issuer.unwrap_or(self.token_url)
    }

    /// Whether `aud` names this authorization server.
    fn addressed_by(&self, aud: &str) -> bool {
        same_issuer(aud, self.token_url) || self.issuer.is_some_and(|i| same_issuer(aud, i))
    }
}

/// The grant a token request asks with.
#[derive(Debug)]
pub enum GrantKind<'a> {
    /// The service's own: client credentials, or, with workload identity,
    /// the JWT bearer grant of the workload identity token.
    Service,
    /// Token exchange (RFC 8693) of the caller's token for one addressed
    /// to `audience`.
    TokenExchange {
        /// The caller's token.
        subject_token: &'a SecretString,
        /// The audience asked for.
        audience: &'a str,
    },
}

/// Builds the client-credentials (or workload identity) token request for
/// `target` proving `credential`.
pub async fn build(
    target: &Target<'_>,
    credential: &Credential<'_>,
    workload: &WorkloadToken,
) -> Result<TokenRequest, String> {
    build_for(target, credential, workload, &GrantKind::Service).await
}

/// Builds the token request of `grant` for `target`, the client proving
/// itself with `credential`.
pub async fn build_for(
    target: &Target<'_>,
    credential: &Credential<'_>,
    workload: &WorkloadToken,
    grant: &GrantKind<'_>,
) -> Result<TokenRequest, String> {
    let mut form = Vec::new();
    match (grant, credential) {
        (GrantKind::Service, Credential::WorkloadIdentity) => {
            let token = workload.read().await?;
            let aud = audiences(token.expose_secret());
            if !aud.iter().any(|aud| target.addressed_by(aud)) {
                return Err(
                    "the workload identity token is not addressed to this authorization server (its aud claim names another); it is not sent"
                        .into(),
                );
            }
            form.push(("grant_type", JWT_BEARER_GRANT.to_owned()));
            form.push(("assertion", token.expose_secret().to_owned()));
        }
        (GrantKind::Service, _) => form.push(("grant_type", "client_credentials".to_owned())),
        (GrantKind::TokenExchange { .. }, Credential::WorkloadIdentity) => {
            return Err("a token exchange needs a client secret or a private key".into());
        }
        (
            GrantKind::TokenExchange {
                subject_token,
                audience,
            },
            _,
        ) => {
            form.push(("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()));
            form.push(("subject_token", subject_token.expose_secret().to_owned()));
            form.push(("subject_token_type", ACCESS_TOKEN_TYPE.to_owned()));
            form.push(("requested_token_type", ACCESS_TOKEN_TYPE.to_owned()));
            form.push(("audience", (*audience).to_owned()));
        }
    }
    let basic = client_authentication(target, credential, &mut form)?;
    if !target.scopes.is_empty() {
        form.push(("scope", target.scopes.join(" ")));
    }
    form.push(("resource", target.resource.to_owned()));
    Ok(TokenRequest { form, basic })
}

/// Adds the client's authentication by `credential` to `form`; returns the
/// HTTP Basic credentials of `client_secret_basic`.
fn client_authentication(
    target: &Target<'_>,
    credential: &Credential<'_>,
    form: &mut Vec<(&'static str, String)>,
) -> Result<Option<(String, SecretString)>, String> {
    match credential {
        Credential::SecretBasic(secret) => {
            return Ok(Some((target.client_id.to_owned(), (*secret).clone())));
        }
        Credential::SecretPost(secret) => {
            form.push(("client_id", target.client_id.to_owned()));
            form.push(("client_secret", secret.expose_secret().to_owned()));
        }
        Credential::PrivateKeyJwt { key, algorithm } => {
            form.push(("client_assertion_type", JWT_ASSERTION_TYPE.to_owned()));
            form.push((
                "client_assertion",
                client_assertion(target.client_id, target.audience(), key, algorithm)?,
            ));
        }
        Credential::WorkloadIdentity => {
            if !target.client_id.is_empty() {
                form.push(("client_id", target.client_id.to_owned()));
            }
        }
    }
    Ok(None)
}

/// A client assertion (RFC 7523 section 3): `client_id` as issuer and
/// subject, addressed to `audience`, good for one minute, signed with `key`.
pub(super) fn client_assertion(
    client_id: &str,
    audience: &str,
    key: &SecretString,
    algorithm: &str,
) -> Result<String, String> {
    let (algorithm, key) = signing_key(algorithm, key.expose_secret())
        .map_err(|why| format!("the private key is unusable: it {why}"))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME.as_secs(),
        "jti": uuid::Uuid::now_v7().to_string(),
    });
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
        .map_err(|_| "the client assertion could not be signed".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &Value) -> String {
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        format!("e30.{payload}.sig")
    }

    #[test]
    fn audiences_are_read_from_a_string_or_a_list() {
        assert_eq!(audiences(&jwt(&json!({"aud": "https://a"}))), ["https://a"]);
        assert_eq!(
            audiences(&jwt(&json!({"aud": ["https://a", "https://b"]}))),
            ["https://a", "https://b"]
        );
        assert!(audiences(&jwt(&json!({}))).is_empty());
        assert!(audiences("not a jwt").is_empty());
    }

    #[tokio::test]
    async fn a_workload_token_past_the_bound_is_refused() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("token");
        std::fs::write(&path, "x".repeat(100)).expect("written");
        let workload = WorkloadToken {
            file: Some(path),
            max_bytes: 99,
        };
        let error = workload.read().await.expect_err("refused");
        assert!(error.contains("larger than 99 bytes"), "{error}");
    }
}
