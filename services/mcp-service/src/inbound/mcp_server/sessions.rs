//! [`BoundedSessions`]: the MCP client sessions of the initialize era,
//! counted overall and per organization, each bound to the caller that
//! opened it, closed after an idle time.
//!
//! Sessions are shared by the replicas ([`EndpointSessionStore`]): a client
//! sends its requests on whatever connections it likes, and a replica that
//! does not hold a session restores it from the store (the SDK replays the
//! client's `initialize` on a new local session) once the caller is shown
//! to be its owner. Each replica holds its own copy of a session it
//! serves; the calls and their upstream sessions are the replica's own.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use futures::{Stream, StreamExt as _};
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        WorkerTransport,
        streamable_http_server::session::{
            RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
            local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker},
        },
    },
};

use super::{
    answers::{Asks, Incoming, MAX_RELAYED_PER_SESSION, POLL_EVERY, TAKE_PER_POLL},
    standalone::Standalone,
};
use crate::domain::endpoint_session::{EndpointSessionStore, RelayKind, Relayed, SessionOwner};

/// Who opened a session, and on which path: only they may use it there.
pub(super) type Owner = SessionOwner;

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

    /// Who made the request.
    pub fn owner(&self) -> &Owner {
        &self.owner
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
    /// The shared store could not be read.
    #[error("the shared session store failed: {0:#}")]
    Shared(anyhow::Error),
    /// An answer for another replica could not be left for it.
    #[error("{0}")]
    Relay(String),
}

/// This replica's sessions, bounded, and their shared records.
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    asks: Arc<Asks>,
    standalone: Arc<Standalone>,
    owners: Mutex<HashMap<SessionId, Local>>,
    shared: Arc<dyn EndpointSessionStore>,
    limits: SessionLimits,
}

/// A session this replica holds: its owner, and when its use was last
/// written to the shared store.
struct Local {
    owner: Owner,
    noted: Instant,
}

impl BoundedSessions {
    /// No sessions yet; shared ones in `shared`.
    pub fn new(limits: SessionLimits, shared: Arc<dyn EndpointSessionStore>) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle_timeout);
        let asks = Arc::new(Asks::new());
        Self {
            inner,
            standalone: Arc::new(Standalone::new(asks.clone(), shared.clone())),
            asks,
            owners: Mutex::new(HashMap::new()),
            shared,
            limits,
        }
    }

    /// The shared store.
    pub fn shared(&self) -> &Arc<dyn EndpointSessionStore> {
        &self.shared
    }

    /// Gives the client's `message` to this replica's copy of session `id`.
    pub async fn accept_here(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    /// The idle time after which a session closes.
    pub fn idle_timeout(&self) -> Duration {
        self.limits.idle_timeout
    }

    /// Who owns session `id`, if this replica holds it or the shared store
    /// has it (used within the idle time).
    pub async fn owner(&self, id: &str) -> Result<Option<Owner>, SessionError> {
        if let Some(local) = self.owners().get(id) {
            return Ok(Some(local.owner.clone()));
        }
        let stored = self
            .shared
            .load(id, used_since(self.limits.idle_timeout))
            .await
            .map_err(SessionError::Shared)?;
        Ok(stored.map(|session| session.owner))
    }

    /// Notes a use of session `id`: written to the shared store at most
    /// once a quarter of the idle time, in the background, so that a
    /// session in use on any replica does not expire.
    pub fn used(&self, id: &str) {
        let now = Instant::now();
        let due = {
            let mut owners = self.owners();
            match owners.get_mut(id) {
                Some(local) if now - local.noted >= self.limits.idle_timeout / 4 => {
                    local.noted = now;
                    true
                }
                _ => false,
            }
        };
        if due {
            let shared = self.shared.clone();
            let id = id.to_owned();
            tokio::spawn(async move {
                if let Err(error) = shared.touch(&id, switchboard_db::now_millis()).await {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "a session's use was not noted"
                    );
                }
            });
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Local>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts the new session of `owner` in, or says which limit is reached:
    /// this replica's, and the organization's across the replicas.
    async fn admit(&self, id: &SessionId, owner: &Owner) -> Result<(), String> {
        let shared = self
            .shared
            .count_of_org(&owner.org_id, used_since(self.limits.idle_timeout))
            .await
            .map_err(|error| format!("the shared session store failed: {error:#}"))?;
        let mut owners = self.owners();
        if owners.len() >= self.limits.max {
            return Err(format!(
                "the endpoint has {} MCP sessions open, its limit",
                self.limits.max
            ));
        }
        let of_org = owners
            .values()
            .filter(|local| local.owner.org_id == owner.org_id)
            .count();
        if usize::try_from(shared).unwrap_or(usize::MAX).max(of_org) >= self.limits.max_per_org {
            return Err(format!(
                "the organization has {} MCP sessions open, its limit",
                self.limits.max_per_org
            ));
        }
        owners.insert(
            id.clone(),
            Local {
                owner: owner.clone(),
                noted: Instant::now(),
            },
        );
        Ok(())
    }

    /// The owner of the request being served, admitted as the owner of
    /// session `id`; a refusal is told to the request.
    async fn admit_opening(&self, id: &SessionId) -> Result<(), SessionError> {
        let opening = OPENING
            .try_with(Arc::clone)
            .map_err(|_| SessionError::NoOwner)?;
        if let Err(reason) = self.admit(id, &opening.owner).await {
            *opening
                .refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            return Err(SessionError::Full(reason));
        }
        Ok(())
    }
}

impl BoundedSessions {
    /// `stream` of session `id`, its requests' ids naming this replica.
    fn tagged(
        &self,
        id: &SessionId,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let (asks, id) = (self.asks.clone(), id.clone());
        stream.map(move |event| asks.outgoing(&id, event))
    }

    /// Leaves the client's answer `message` in session `id` for `replica`.
    async fn relay(
        &self,
        id: &SessionId,
        message: &ClientJsonRpcMessage,
        replica: String,
    ) -> Result<(), SessionError> {
        let answer = Relayed {
            kind: RelayKind::Answer,
            replica,
            session_id: id.to_string(),
            message_json: serde_json::to_string(message)
                .map_err(|error| SessionError::Relay(error.to_string()))?,
        };
        let left = self
            .shared
            .relay(
                &answer,
                MAX_RELAYED_PER_SESSION,
                switchboard_db::now_millis(),
            )
            .await
            .map_err(SessionError::Shared)?;
        if left {
            Ok(())
        } else {
            Err(SessionError::Relay(format!(
                "the session has {MAX_RELAYED_PER_SESSION} answers waiting for other replicas"
            )))
        }
    }
}

/// Gives what other replicas left for this one — answers to its copies'
/// requests, messages for the clients' streams it holds — while any of its
/// requests waits or it holds a stream, until `stop`.
pub(super) async fn deliver_relayed(
    sessions: Arc<BoundedSessions>,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(POLL_EVERY) => {}
        }
        if !sessions.asks.any_waiting() && !sessions.standalone.any_live() {
            continue;
        }
        let relayed = match sessions
            .shared
            .take_relayed(sessions.asks.tag(), TAKE_PER_POLL)
            .await
        {
            Ok(relayed) => relayed,
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "relayed messages were not read"
                );
                continue;
            }
        };
        for message in relayed {
            match message.kind {
                RelayKind::Answer => sessions.deliver(message).await,
                RelayKind::Notice => sessions.standalone.deliver(&message),
            }
        }
    }
}

impl BoundedSessions {
    async fn deliver(&self, answer: Relayed) {
        let Ok(message) = serde_json::from_str::<ClientJsonRpcMessage>(&answer.message_json) else {
            tracing::warn!("a relayed answer is not a JSON-RPC message");
            return;
        };
        let id = SessionId::from(answer.session_id);
        if let Incoming::Here(message) = self.asks.incoming(&id, message)
            && let Err(error) = self.accept_here(&id, *message).await
        {
            tracing::warn!(error = %error, "a relayed answer's session is gone");
        }
    }
}

/// The earliest last use of a session that has not expired.
pub(super) fn used_since(idle_timeout: Duration) -> i64 {
    let idle = i64::try_from(idle_timeout.as_millis()).unwrap_or(i64::MAX);
    switchboard_db::now_millis().saturating_sub(idle)
}

impl SessionManager for BoundedSessions {
    type Error = SessionError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        if let Err(error) = self.admit_opening(&id).await {
            let _ = self.inner.close_session(&id).await;
            return Err(error);
        }
        Ok((id, transport))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.admit_opening(&id).await?;
        let outcome = self.inner.restore_session(id.clone()).await;
        if matches!(outcome, Err(_) | Ok(RestoreOutcome::NotSupported)) {
            self.owners().remove(&id);
        }
        Ok(outcome?)
    }

    /// Initializes the copy, then pumps what it sends on its own to the
    /// client's stream, wherever that is held.
    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.inner.initialize_session(id, message).await?;
        let own = self.inner.create_standalone_stream(id).await?;
        self.standalone.pump(id.clone(), Box::pin(own));
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners().remove(id);
        self.asks.forget(id);
        self.standalone.forget(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.tagged(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        match self.asks.incoming(id, message) {
            Incoming::Here(message) => self.accept_here(id, *message).await,
            Incoming::Elsewhere { replica, message } => self.relay(id, &message, replica).await,
        }
    }

    /// The client's stream, fed by every replica's copy of the session.
    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.standalone.open(id, None).await)
    }

    /// A call's stream resumed from this replica's copy (its event ids are
    /// `index/request`), or the client's own stream resumed.
    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if last_event_id.contains('/') {
            let stream = self.inner.resume(id, last_event_id).await?;
            return Ok(self.tagged(id, stream).left_stream());
        }
        Ok(self
            .standalone
            .open(id, Some(&last_event_id))
            .await
            .right_stream())
    }
}
