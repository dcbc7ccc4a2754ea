//! A client's answers to the server's requests (elicitation, sampling,
//! roots), whichever replica they land on.
//!
//! A session is served by every replica a request of it lands on, each
//! with its own copy; a request the server makes is made by one copy, and
//! the client may POST its answer to another replica. So each request
//! leaves with an id naming the replica that made it (`{tag}.{id}`, the
//! tag random per process); an answer naming this replica is given back to
//! its copy of the session with the id it had, and one naming another is
//! left for that replica in the shared store, which it polls while it has
//! requests waiting.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use rmcp::{
    model::{ClientJsonRpcMessage, JsonRpcMessage, NumberOrString, RequestId},
    transport::streamable_http_server::session::{ServerSseMessage, SessionId},
};

/// Most answers of one session left for other replicas at once.
pub(super) const MAX_RELAYED_PER_SESSION: usize = 16;

/// How often a replica with requests waiting looks for answers left for it.
pub(super) const POLL_EVERY: Duration = Duration::from_millis(100);

/// Most answers taken in one poll.
pub(super) const TAKE_PER_POLL: usize = 64;

/// The requests this replica's copies of sessions made and wait answers to.
#[derive(Debug)]
pub(super) struct Asks {
    tag: String,
    waiting: Mutex<HashMap<SessionId, HashSet<String>>>,
}

/// Where a client's message goes.
pub(super) enum Incoming {
    /// To this replica's copy of the session, as it is now.
    Here(Box<ClientJsonRpcMessage>),
    /// To the replica `replica`, through the shared store.
    Elsewhere {
        replica: String,
        message: Box<ClientJsonRpcMessage>,
    },
}

impl Asks {
    /// No requests yet; this replica's tag drawn at random.
    pub fn new() -> Self {
        Self {
            tag: uuid::Uuid::new_v4().simple().to_string()[..16].to_owned(),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// This replica's tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Whether any request waits for an answer.
    pub fn any_waiting(&self) -> bool {
        !self.waiting().is_empty()
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, HashSet<String>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `event` as the client sees it: a request the session makes leaves
    /// with an id naming this replica, and is waited for.
    pub fn outgoing(&self, session: &SessionId, mut event: ServerSseMessage) -> ServerSseMessage {
        let Some(message) = event.message.as_deref() else {
            return event;
        };
        let JsonRpcMessage::Request(request) = message else {
            return event;
        };
        let wire = self.wire_id(&request.id);
        let mut request = request.clone();
        request.id = NumberOrString::String(wire.clone().into());
        self.waiting()
            .entry(session.clone())
            .or_default()
            .insert(wire);
        event.message = Some(Arc::new(JsonRpcMessage::Request(request)));
        event
    }

    fn wire_id(&self, id: &RequestId) -> String {
        match id {
            NumberOrString::Number(n) => format!("{}.n{n}", self.tag),
            NumberOrString::String(s) => format!("{}.s{s}", self.tag),
        }
    }

    /// Where the client's `message` in `session` goes: an answer to this
    /// replica's request back to its copy with the id it had, an answer to
    /// another replica's to that replica, anything else here as it is.
    pub fn incoming(&self, session: &SessionId, message: ClientJsonRpcMessage) -> Incoming {
        let id = match &message {
            JsonRpcMessage::Response(response) => &response.id,
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id,
                None => return Incoming::Here(Box::new(message)),
            },
            _ => return Incoming::Here(Box::new(message)),
        };
        let NumberOrString::String(wire) = id else {
            return Incoming::Here(Box::new(message));
        };
        let Some((tag, original)) = wire.split_once('.') else {
            return Incoming::Here(Box::new(message));
        };
        if tag != self.tag {
            return if is_tag(tag) {
                Incoming::Elsewhere {
                    replica: tag.to_owned(),
                    message: Box::new(message),
                }
            } else {
                Incoming::Here(Box::new(message))
            };
        }
        let Some(original) = original_id(original) else {
            return Incoming::Here(Box::new(message));
        };
        let wire = wire.to_string();
        {
            let mut waiting = self.waiting();
            if let Some(ids) = waiting.get_mut(session) {
                ids.remove(&wire);
                if ids.is_empty() {
                    waiting.remove(session);
                }
            }
        }
        Incoming::Here(Box::new(with_id(message, original)))
    }

    /// Forgets what session `id` waits for (it is closed).
    pub fn forget(&self, id: &SessionId) {
        self.waiting().remove(id);
    }
}

/// Whether `tag` can be a replica's tag (16 lowercase hex digits): nothing
/// else is left in the shared store.
fn is_tag(tag: &str) -> bool {
    tag.len() == 16
        && tag
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The id `encoded` (after the tag) stood for.
fn original_id(encoded: &str) -> Option<RequestId> {
    if let Some(number) = encoded.strip_prefix('n') {
        return number.parse().ok().map(NumberOrString::Number);
    }
    encoded
        .strip_prefix('s')
        .map(|s| NumberOrString::String(s.into()))
}

fn with_id(message: ClientJsonRpcMessage, id: RequestId) -> ClientJsonRpcMessage {
    match message {
        JsonRpcMessage::Response(mut response) => {
            response.id = id;
            JsonRpcMessage::Response(response)
        }
        JsonRpcMessage::Error(mut error) => {
            error.id = Some(id);
            JsonRpcMessage::Error(error)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
