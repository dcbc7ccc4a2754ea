//! The client's own stream of a session (its GET), whichever replica holds
//! it, and what the session's copies send on their own.
//!
//! A session is served by every replica a request of it lands on, each with
//! its own copy and its own upstream sessions. What a copy sends on its own
//! — list changes, the log messages and resource updates of its upstream
//! sessions, a request not tied to a call — belongs on the client's GET
//! stream, which one replica holds. So each copy's own messages are pumped
//! here: given to the client's stream when this replica holds it, left in
//! the shared store for the replica that does otherwise
//! ([`RelayKind::Notice`]), which gives them to the stream it holds when it
//! polls.
//!
//! Bounded at every step: a copy's messages wait in a queue of
//! [`OUTBOX`] (the copy never waits for the store or a slow client; past
//! it they are dropped), at most [`MAX_RELAYED_PER_SESSION`] of a session
//! wait in the store, a stream buffers [`CHANNEL`] and keeps the last
//! [`CACHE`] for a client that reconnects with `Last-Event-ID`.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::{Stream, StreamExt as _};
use rmcp::{
    model::ServerJsonRpcMessage,
    transport::streamable_http_server::session::{ServerSseMessage, SessionId},
};
use tokio::{sync::mpsc, time::Instant};
use tokio_stream::wrappers::ReceiverStream;

use super::answers::{Asks, MAX_RELAYED_PER_SESSION};
use crate::domain::endpoint_session::{EndpointSessionStore, RelayKind, Relayed};

/// Messages of one copy waiting to be given on or relayed.
pub(super) const OUTBOX: usize = 64;

/// Messages a client's stream buffers before it drops (the cache keeps
/// them for a reconnect).
pub(super) const CHANNEL: usize = 16;

/// Messages of a session kept for a client that reconnects.
pub(super) const CACHE: usize = 16;

/// Streams of one session kept open beside its live one, for clients that
/// reconnect while the old stream is not yet seen to be gone (each only
/// keeps its connection alive).
const SHADOWS: usize = 4;

/// How long a copy trusts what it read of who holds the client's stream,
/// and how long it stops relaying after the store refused a message.
const HOLDER_FRESH: Duration = Duration::from_secs(1);

/// The clients' streams this replica holds, by session.
#[derive(Debug)]
pub(super) struct Standalone {
    asks: Arc<Asks>,
    shared: Arc<dyn EndpointSessionStore>,
    hubs: Mutex<HashMap<SessionId, Hub>>,
}

/// One session's stream here: the live one, the ones kept beside it, and
/// the last messages given on it.
#[derive(Debug, Default)]
struct Hub {
    live: Option<mpsc::Sender<ServerSseMessage>>,
    shadows: Vec<mpsc::Sender<ServerSseMessage>>,
    cache: VecDeque<ServerSseMessage>,
    given: u64,
}

impl Hub {
    fn is_live(&self) -> bool {
        self.live.as_ref().is_some_and(|live| !live.is_closed())
    }

    /// Gives `message` on the live stream (if any) and keeps it for a
    /// reconnect.
    fn give(&mut self, message: ServerJsonRpcMessage) {
        self.given += 1;
        let mut event = ServerSseMessage::from_message(message);
        event.event_id = Some(self.given.to_string());
        if self.cache.len() == CACHE {
            self.cache.pop_front();
        }
        self.cache.push_back(event.clone());
        if let Some(live) = &self.live
            && live.try_send(event).is_err()
        {
            tracing::debug!("a client's stream is full; its message waits for a reconnect");
        }
    }

    /// A stream for a client's GET: the live one when none is, replaying
    /// what came after `after`; otherwise one kept beside it.
    fn open(&mut self, after: Option<u64>) -> mpsc::Receiver<ServerSseMessage> {
        if self.is_live() {
            let (tx, rx) = mpsc::channel(1);
            if self.shadows.len() == SHADOWS {
                self.shadows.remove(0);
            }
            self.shadows.retain(|shadow| !shadow.is_closed());
            self.shadows.push(tx);
            return rx;
        }
        let (tx, rx) = mpsc::channel(CHANNEL.max(CACHE));
        if let Some(after) = after {
            for event in self.cache.iter().filter(|event| index(event) > after) {
                let _ = tx.try_send(event.clone());
            }
        }
        self.live = Some(tx);
        rx
    }
}

fn index(event: &ServerSseMessage) -> u64 {
    event
        .event_id
        .as_deref()
        .and_then(|id| id.parse().ok())
        .unwrap_or(0)
}

impl Standalone {
    /// No streams yet; requests made on them tagged by `asks`, messages for
    /// other replicas left in `shared`.
    pub fn new(asks: Arc<Asks>, shared: Arc<dyn EndpointSessionStore>) -> Self {
        Self {
            asks,
            shared,
            hubs: Mutex::new(HashMap::new()),
        }
    }

    fn hubs(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Hub>> {
        self.hubs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client's stream of session `id`, held here from now on; with
    /// `last_event_id` (a reconnect), what this replica gave after it is
    /// given again.
    pub async fn open(
        &self,
        id: &SessionId,
        last_event_id: Option<&str>,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static + use<> {
        let after = last_event_id.and_then(|last| last.parse().ok());
        let rx = self.hubs().entry(id.clone()).or_default().open(after);
        if let Err(error) = self.shared.hold_stream(id, self.asks.tag()).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "where a session's stream is held was not recorded"
            );
        }
        ReceiverStream::new(rx)
    }

    /// Whether a client's stream is live here.
    pub fn any_live(&self) -> bool {
        self.hubs().values().any(Hub::is_live)
    }

    /// Forgets session `id`'s stream (the session is closed): it ends.
    pub fn forget(&self, id: &SessionId) {
        self.hubs().remove(id);
    }

    /// Gives `message` of session `id` on the stream held here; false when
    /// no stream of it is held here.
    fn give(&self, id: &SessionId, message: ServerJsonRpcMessage, live_only: bool) -> bool {
        let mut hubs = self.hubs();
        match hubs.get_mut(id) {
            Some(hub) if hub.is_live() || !live_only => {
                hub.give(message);
                true
            }
            _ => false,
        }
    }

    /// Gives a message another replica relayed to the stream held here.
    pub fn deliver(&self, relayed: &Relayed) {
        let Ok(message) = serde_json::from_str::<ServerJsonRpcMessage>(&relayed.message_json)
        else {
            tracing::warn!("a relayed message is not a JSON-RPC message");
            return;
        };
        let id = SessionId::from(relayed.session_id.clone());
        if !self.give(&id, message, false) {
            tracing::debug!("a relayed message's stream is no longer held here");
        }
    }

    /// Pumps what this replica's copy of session `id` sends on its own
    /// (`stream`) to the client's stream, wherever it is held, until the
    /// copy closes.
    pub fn pump(
        self: &Arc<Self>,
        id: SessionId,
        mut stream: impl Stream<Item = ServerSseMessage> + Send + Unpin + 'static,
    ) {
        let (outbox, mut waiting) = mpsc::channel::<ServerJsonRpcMessage>(OUTBOX);
        let asks = self.asks.clone();
        let session = id.clone();
        tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                let event = asks.outgoing(&session, event);
                let Some(message) = event.message else {
                    continue;
                };
                if outbox.try_send(Arc::unwrap_or_clone(message)).is_err() {
                    tracing::debug!("a session sends faster than its stream takes; dropped");
                }
            }
        });
        let this = self.clone();
        tokio::spawn(async move {
            let mut route = Route::default();
            while let Some(message) = waiting.recv().await {
                this.route(&id, message, &mut route).await;
            }
        });
    }

    async fn route(&self, id: &SessionId, message: ServerJsonRpcMessage, route: &mut Route) {
        if self.give(id, message.clone(), true) {
            return;
        }
        let now = Instant::now();
        if route.refused_until.is_some_and(|until| now < until) {
            return;
        }
        if route.read_at.is_none_or(|at| now - at >= HOLDER_FRESH) {
            route.holder = match self.shared.stream_holder(id).await {
                Ok(holder) => holder,
                Err(error) => {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "where a session's stream is held was not read"
                    );
                    None
                }
            };
            route.read_at = Some(now);
        }
        let Some(holder) = route.holder.as_deref() else {
            return;
        };
        if holder == self.asks.tag() {
            self.give(id, message, false);
        } else if !self.relay(id, holder, &message).await {
            route.refused_until = Some(now + HOLDER_FRESH);
        }
    }

    /// Leaves `message` for replica `holder`; false when the store refused
    /// it (too many wait) or failed.
    async fn relay(&self, id: &SessionId, holder: &str, message: &ServerJsonRpcMessage) -> bool {
        let Ok(message_json) = serde_json::to_string(message) else {
            return true;
        };
        let relayed = Relayed {
            kind: RelayKind::Notice,
            replica: holder.to_owned(),
            session_id: id.to_string(),
            message_json,
        };
        match self
            .shared
            .relay(
                &relayed,
                MAX_RELAYED_PER_SESSION,
                switchboard_db::now_millis(),
            )
            .await
        {
            Ok(true) => true,
            Ok(false) => {
                tracing::debug!("a session's messages for another replica are at their limit");
                false
            }
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "a session's message was not relayed"
                );
                false
            }
        }
    }
}

/// What a copy knows of where its session's stream is held.
#[derive(Debug, Default)]
struct Route {
    holder: Option<String>,
    read_at: Option<Instant>,
    refused_until: Option<Instant>,
}

#[cfg(test)]
mod tests;
