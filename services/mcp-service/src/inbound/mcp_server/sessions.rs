//! [`BoundedSessions`]: the MCP client sessions of the initialize era,
//! counted overall and per organization, each bound to the caller that
//! opened it, closed after an idle time.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        WorkerTransport,
        streamable_http_server::session::{
            ServerSseMessage, SessionId, SessionManager,
            local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker},
        },
    },
};

/// Who opened a session, and on which path: only they may use it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Owner {
    /// The caller's organization.
    pub org_id: String,
    /// The caller's user.
    pub user_id: String,
    /// The endpoint path the session was opened on.
    pub path: String,
}

/// A request that may open a session: its caller, and why it was refused
/// one, when it was.
#[derive(Debug)]
pub(super) struct Opening {
    owner: Owner,
    refused: Mutex<Option<String>>,
}

impl Opening {
    /// A request of `owner`.
    pub fn new(owner: Owner) -> Arc<Self> {
        Arc::new(Self {
            owner,
            refused: Mutex::new(None),
        })
    }

    /// Why the request was refused a session, if it was.
    pub fn refusal(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

tokio::task_local! {
    /// The request being served, so that a session it opens knows its
    /// owner (the SDK opens sessions without the request at hand).
    pub(super) static OPENING: Arc<Opening>;
}

/// The session limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct SessionLimits {
    /// Most sessions open at once.
    pub max: usize,
    /// Most sessions of one organization open at once.
    pub max_per_org: usize,
    /// Idle time after which a session closes.
    pub idle_timeout: Duration,
}

/// Why a session was not opened or used.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionError {
    /// A limit is reached.
    #[error("{0}")]
    Full(String),
    /// No request was being served (cannot happen through the endpoint).
    #[error("a session can only be opened by an authenticated request")]
    NoOwner,
    /// The SDK's session store failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// In-memory sessions (one replica's; a client whose replica goes opens a
/// new one), bounded.
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    owners: Mutex<HashMap<SessionId, Owner>>,
    limits: SessionLimits,
}

impl BoundedSessions {
    /// No sessions yet.
    pub fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle_timeout);
        Self {
            inner,
            owners: Mutex::new(HashMap::new()),
            limits,
        }
    }

    /// Who owns session `id`, if it is open.
    pub fn owner(&self, id: &str) -> Option<Owner> {
        self.owners().get(id).cloned()
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts the new session of `owner` in, or says which limit is reached.
    fn admit(&self, id: &SessionId, owner: &Owner) -> Result<(), String> {
        let mut owners = self.owners();
        if owners.len() >= self.limits.max {
            return Err(format!(
                "the endpoint has {} MCP sessions open, its limit",
                self.limits.max
            ));
        }
        let of_org = owners.values().filter(|o| o.org_id == owner.org_id).count();
        if of_org >= self.limits.max_per_org {
            return Err(format!(
                "the organization has {} MCP sessions open, its limit",
                self.limits.max_per_org
            ));
        }
        owners.insert(id.clone(), owner.clone());
        Ok(())
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let opening = OPENING
            .try_with(Arc::clone)
            .map_err(|_| SessionError::NoOwner)?;
        let (id, transport) = self.inner.create_session().await?;
        if let Err(reason) = self.admit(&id, &opening.owner) {
            let _ = self.inner.close_session(&id).await;
            *opening
                .refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            return Err(SessionError::Full(reason));
        }
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
