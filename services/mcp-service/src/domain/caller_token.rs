//! The caller's own token, carried from the gRPC request to the one place
//! that may send it: the token endpoint of an exchange on the caller's
//! behalf.
//!
//! It travels as a task-local value around the call rather than as an
//! argument, so that none of the layers in between (policy, audit, quotas,
//! the session pool) ever holds it and none can log, store or trace it. A
//! session opened within the call is opened with it; nothing outside the
//! call (a background listener, a reconnection by another caller) can reach
//! it.

use std::{future::Future, sync::Arc};

use secrecy::{ExposeSecret as _, SecretString};

tokio::task_local! {
    static CALLER_TOKEN: CallerToken;
}

/// The token to exchange on the caller's behalf. Its `Debug` prints nothing
/// of it.
#[derive(Clone)]
pub struct CallerToken(Arc<SecretString>);

impl std::fmt::Debug for CallerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallerToken(..)")
    }
}

impl CallerToken {
    /// Wraps the caller's token.
    pub fn new(token: Arc<SecretString>) -> Self {
        Self(token)
    }

    /// The token itself, for the exchange's request body only.
    pub fn secret(&self) -> &SecretString {
        &self.0
    }

    /// The token's claims, read without checking the signature: the token
    /// that authenticated the call was checked, and a separate one is
    /// checked by the authorization server it is exchanged at.
    fn claims(&self) -> Option<serde_json::Value> {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
        let payload = self.0.expose_secret().split('.').nth(1)?;
        let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The token's `sub` claim.
    pub fn subject(&self) -> Option<String> {
        self.claims()?.get("sub")?.as_str().map(str::to_owned)
    }

    /// The token's `exp` claim (seconds since the epoch).
    pub fn expires_at(&self) -> Option<u64> {
        self.claims()?.get("exp")?.as_u64()
    }
}

/// Runs `call` with `token` as the caller's token (none: no exchange can
/// be made within it).
pub async fn with_caller_token<F: Future>(token: Option<CallerToken>, call: F) -> F::Output {
    match token {
        Some(token) => CALLER_TOKEN.scope(token, call).await,
        None => call.await,
    }
}

/// The caller's token of the call being served, if it has one.
pub fn caller_token() -> Option<CallerToken> {
    CALLER_TOKEN.try_with(CallerToken::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: &str) -> CallerToken {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
        let payload = URL_SAFE_NO_PAD.encode(claims);
        CallerToken::new(Arc::new(SecretString::from(format!("e30.{payload}.sig"))))
    }

    #[test]
    fn the_subject_and_expiry_are_read_and_nothing_is_printed() {
        let t = token(r#"{"sub":"alice","exp":42}"#);
        assert_eq!(t.subject().as_deref(), Some("alice"));
        assert_eq!(t.expires_at(), Some(42));
        assert_eq!(format!("{t:?}"), "CallerToken(..)");
        assert_eq!(token("{}").subject(), None);
    }

    #[tokio::test]
    async fn the_token_is_reachable_only_within_the_call() {
        assert!(caller_token().is_none());
        let seen = with_caller_token(Some(token("{}")), async { caller_token().is_some() }).await;
        assert!(seen);
        assert!(caller_token().is_none());
    }
}
