//! What a token endpoint answers: the token, its stated lifetime (clamped,
//! since the endpoint is a tenant's), whether it is DPoP-bound, or the
//! error it names.

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;
use serde_json::Value;

/// Lifetime assumed when the endpoint gives none.
pub(super) const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// Longest lifetime believed: a token is fetched again at least this often,
/// whatever the endpoint claims (and `now + lifetime` cannot overflow).
pub(super) const MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// An error answer of a token endpoint.
#[derive(Deserialize)]
pub(super) struct TokenError {
    /// The error code (`invalid_client`, `use_dpop_nonce`, …).
    pub error: String,
}

/// A token endpoint's answer.
#[derive(Deserialize)]
pub(super) struct TokenResponse {
    /// The token.
    pub access_token: String,
    /// Its lifetime in seconds, as a number or a numeric string.
    #[serde(default)]
    pub expires_in: Option<Value>,
    /// `Bearer` or `DPoP`.
    #[serde(default)]
    pub token_type: Option<String>,
}

/// What the token endpoint issued: the token, how long it is good for,
/// and whether it is bound to the key the request proved.
pub(super) struct Issued {
    /// The access token.
    pub token: SecretString,
    /// Its lifetime, clamped.
    pub lifetime: Duration,
    /// Whether the server bound it with DPoP (`token_type` `DPoP`).
    pub dpop_bound: bool,
}

/// The lifetime a token response states, clamped to [`MAX_LIFETIME`]:
/// seconds as a JSON number or a numeric string (some endpoints send one).
pub(super) fn lifetime(expires_in: Option<&Value>) -> Duration {
    let seconds = match expires_in {
        Some(Value::Number(n)) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|s| *s >= 0.0)
                .map(|s| s.min(u64::MAX as f64) as u64)
        }),
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    seconds.map_or(DEFAULT_LIFETIME, |s| {
        Duration::from_secs(s).min(MAX_LIFETIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifetime_is_read_from_a_number_or_a_string_and_clamped() {
        assert_eq!(lifetime(Some(&Value::from(60))), Duration::from_secs(60));
        assert_eq!(lifetime(Some(&Value::from("60"))), Duration::from_secs(60));
        assert_eq!(lifetime(Some(&Value::from(u64::MAX))), MAX_LIFETIME);
        assert_eq!(lifetime(Some(&Value::from(1e300))), MAX_LIFETIME);
        assert_eq!(lifetime(Some(&Value::from(-5))), DEFAULT_LIFETIME);
        assert_eq!(lifetime(None), DEFAULT_LIFETIME);
    }
}
