//! The SDK's session store over the endpoint's [`EndpointSessionStore`]:
//! the SDK records a session once its `initialize` is answered, reads it
//! back on a replica that does not hold it, and forgets it when the client
//! ends it.

use std::{sync::Arc, time::Duration};

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use super::sessions::{OPENING, used_since};
use crate::domain::endpoint_session::{EndpointSessionStore, StoredSession};

/// [`SessionStore`] over the shared sessions, whose records expire after
/// `idle_timeout` without use.
pub(super) struct SharedSessions {
    store: Arc<dyn EndpointSessionStore>,
    idle_timeout: Duration,
}

impl SharedSessions {
    /// The SDK's view of `store`.
    pub fn new(store: Arc<dyn EndpointSessionStore>, idle_timeout: Duration) -> Self {
        Self {
            store,
            idle_timeout,
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for SharedSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(stored) = self
            .store
            .load(session_id, used_since(self.idle_timeout))
            .await
            .map_err(SessionStoreError::from)?
        else {
            return Ok(None);
        };
        let params = serde_json::from_str(&stored.initialize_json)?;
        Ok(Some(SessionState::new(params)))
    }

    /// Records the session with the owner of the request that opened it
    /// (the SDK calls this while serving that request).
    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let owner = OPENING
            .try_with(|opening| opening.owner().clone())
            .map_err(|_| "a session can only be recorded by the request that opened it")?;
        let session = StoredSession {
            owner,
            initialize_json: serde_json::to_string(&state.initialize_params)?,
        };
        self.store
            .save(session_id, &session, switchboard_db::now_millis())
            .await
            .map_err(SessionStoreError::from)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.store
            .delete(session_id)
            .await
            .map_err(SessionStoreError::from)
    }
}

/// Most records one purge statement forgets.
const PURGE_BATCH: usize = 1000;

/// Forgets the shared sessions unused for `idle_timeout`, every half of it
/// (at least every 10 s, at most every 5 min), until `stop`.
pub(super) async fn purge_idle(
    store: Arc<dyn EndpointSessionStore>,
    idle_timeout: Duration,
    stop: tokio_util::sync::CancellationToken,
) {
    let every = (idle_timeout / 2).clamp(Duration::from_secs(10), Duration::from_secs(300));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        loop {
            match store
                .purge_idle(used_since(idle_timeout), PURGE_BATCH)
                .await
            {
                Ok(forgotten) if usize::try_from(forgotten).unwrap_or(0) == PURGE_BATCH => {}
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "idle sessions were not purged"
                    );
                    break;
                }
            }
        }
    }
}
