//! One user's tokens as `rmcp` sees them, kept in their sealed grant and
//! refreshed safely across replicas.
//!
//! The refresh lock is per process, so two replicas may refresh one grant
//! at once. With rotating refresh tokens one of them wins and the other's
//! (now reused) refresh token is refused with `invalid_grant`. So:
//! - the winner writes only over the grant row it read (compare-and-swap on
//!   the row's version) while the row still holds the refresh token it used;
//! - the loser never deletes: when the row already holds other tokens it
//!   leaves them (and its caller reads them again, see
//!   `AuthorizationCodeFlows::session_manager`); when it still holds the
//!   refused ones, it marks them refused (the user authorizes again) without
//!   dropping them, so a winner still in flight can replace them.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use secrecy::{ExposeSecret as _, SecretString};

use crate::outbound::oauth::store::{Grant, GrantKey, SqlOAuthStore};

/// How often a conflicting write is read again and retried before giving up.
const MAX_WRITE_ATTEMPTS: usize = 4;

/// The refresh token of `credentials`, if any (read from the token
/// response's standard JSON form).
fn refresh_token(credentials: Option<&StoredCredentials>) -> Option<SecretString> {
    let response = serde_json::to_value(credentials?.token_response.as_ref()?).ok()?;
    response
        .get("refresh_token")?
        .as_str()
        .map(|token| SecretString::from(token.to_owned()))
}

fn same(a: Option<&SecretString>, b: Option<&SecretString>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.expose_secret() == b.expose_secret(),
        (None, None) => true,
        _ => false,
    }
}

fn storage(error: anyhow::Error) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

/// One user's tokens, in their sealed grant.
pub struct SealedCredentials {
    store: SqlOAuthStore,
    key: GrantKey,
    refresh: Arc<tokio::sync::Mutex<()>>,
    /// The refresh token the last load handed out: a refresh's save writes
    /// only while the row still holds it.
    loaded: Mutex<Option<SecretString>>,
}

impl std::fmt::Debug for SealedCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedCredentials")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl SealedCredentials {
    /// `key`'s tokens in `store`; `refresh` serializes this process's
    /// refreshes of them.
    pub fn new(store: SqlOAuthStore, key: GrantKey, refresh: Arc<tokio::sync::Mutex<()>>) -> Self {
        Self {
            store,
            key,
            refresh,
            loaded: Mutex::new(None),
        }
    }

    fn loaded(&self) -> Option<SecretString> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Applies `change` to the grant while it still holds `expected`'s
    /// refresh token, compare-and-swap on the row's version; whether it was
    /// applied (not when the grant is gone or holds other tokens by now).
    async fn change_while_holding(
        &self,
        expected: Option<&SecretString>,
        change: impl Fn(&mut Grant),
    ) -> Result<bool, AuthError> {
        for _ in 0..MAX_WRITE_ATTEMPTS {
            let Some((mut grant, version)) = self
                .store
                .versioned_grant(&self.key)
                .await
                .map_err(storage)?
            else {
                return Ok(false);
            };
            if !same(refresh_token(grant.credentials.as_ref()).as_ref(), expected) {
                return Ok(false);
            }
            change(&mut grant);
            if self
                .store
                .replace_grant(&self.key, &grant, version)
                .await
                .map_err(storage)?
            {
                return Ok(true);
            }
        }
        Err(AuthError::CredentialStoreError(
            "the grant kept changing while it was written".into(),
        ))
    }
}

#[async_trait]
impl CredentialStore for SealedCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let grant = self.store.grant(&self.key).await.map_err(storage)?;
        let credentials = grant.and_then(|grant| grant.usable_credentials().cloned());
        *self.loaded.lock().unwrap_or_else(PoisonError::into_inner) =
            refresh_token(credentials.as_ref());
        Ok(credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let used = self.loaded();
        let written = self
            .change_while_holding(used.as_ref(), |grant| {
                grant.credentials = Some(credentials.clone());
                grant.refresh_rejected = false;
            })
            .await?;
        if !written {
            // Another replica saved newer tokens (or the user authorized
            // again): theirs stand.
            tracing::info!(integration_id = %self.key.integration, "refreshed tokens superseded by a newer grant");
        }
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let used = self.loaded();
        self.change_while_holding(used.as_ref(), |grant| grant.credentials = None)
            .await
            .map(|_| ())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let guard = self.refresh.clone().lock_owned().await;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        // Marked, not deleted, and only while the row still holds the
        // refused token: a replica that won the race has replaced it.
        let refused = refresh_token(Some(credentials));
        let marked = self
            .change_while_holding(refused.as_ref(), |grant| grant.refresh_rejected = true)
            .await?;
        if !marked {
            tracing::info!(integration_id = %self.key.integration, "refresh lost to a concurrent one; its tokens are kept");
        }
        Ok(())
    }
}
