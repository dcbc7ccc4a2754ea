//! A session of the initialize era is handed to its first call only once
//! the server has answered its standalone GET stream.
//!
//! Such a server may send a request of its own (an elicitation, say) or the
//! answer to a pending call on the session's standalone stream rather than
//! on the stream of the POST it belongs to. The TypeScript SDK sends every
//! `server.request()` not tied to a request there and, without an event
//! store, drops it when no GET stream is open; a server may also hand a
//! pending answer to whichever GET arrives next. rmcp (3.11) opens the
//! standalone stream in a task of its own once the session is initialized
//! and returns the session without waiting for it, so a call made at once
//! raced that GET: on a busy machine the call's POST reached the server
//! first, the server's elicitation went nowhere and the call hung until its
//! deadline, or the late GET took the answer the call's own stream was to
//! resume for. Waiting for the server's answer to the GET (a stream, or a
//! refusal) before the session is used makes a call independent of which
//! of the session's streams the server writes to. The wait is bounded: a
//! server that never answers the GET gets its session after
//! `SWITCHBOARD_MCP_STANDALONE_STREAM_WAIT`, as before.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use tokio::sync::watch;

/// One session's standalone stream, as the session's HTTP client sees it.
#[derive(Debug, Clone)]
pub struct StandaloneStream {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// An initialize request was answered with a session id: rmcp opens the
    /// standalone stream of such a session.
    expected: AtomicBool,
    /// The server has answered the stream's GET (or the GET failed or was
    /// abandoned).
    answered: watch::Sender<bool>,
}

/// How waiting for the standalone stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The session has no standalone stream (no session id, or the
    /// stateless protocol of 2026-07-28).
    NotExpected,
    /// The server answered its GET.
    Answered,
    /// The server did not answer within the limit.
    TimedOut,
}

/// Marks the standalone stream answered when dropped: when its GET has
/// returned, failed, or was given up.
#[derive(Debug)]
pub struct Opening(Arc<Inner>);

impl Drop for Opening {
    fn drop(&mut self) {
        self.0.answered.send_replace(true);
    }
}

impl Default for StandaloneStream {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner {
                expected: AtomicBool::new(false),
                answered: watch::Sender::new(false),
            }),
        }
    }
}

/// Whether `message` is an initialize request.
pub fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_))
    )
}

impl StandaloneStream {
    /// Notes the answer to a POST (an initialize request when
    /// `initialize`): an initialize answered with a session id means a
    /// standalone stream will be opened.
    pub fn initialized(&self, initialize: bool, session_id: Option<&str>) {
        if initialize && session_id.is_some() {
            self.inner.expected.store(true, Ordering::Release);
        }
    }

    /// A guard to hold while a GET is made, when it opens the standalone
    /// stream: one of a session that resumes from no event. (A request's
    /// stream is resumed from its last event id.)
    pub fn opening(
        &self,
        session_id: Option<&str>,
        last_event_id: Option<&str>,
    ) -> Option<Opening> {
        (session_id.is_some() && last_event_id.is_none()).then(|| Opening(self.inner.clone()))
    }

    /// Waits, at most `limit`, until the server has answered the standalone
    /// stream's GET, when the session has one. Called once the handshake has
    /// returned, by which time rmcp has started the GET of a session that
    /// has a standalone stream.
    pub async fn wait(&self, limit: Duration) -> Waited {
        if !self.inner.expected.load(Ordering::Acquire) {
            return Waited::NotExpected;
        }
        let mut answered = self.inner.answered.subscribe();
        match tokio::time::timeout(limit, answered.wait_for(|answered| *answered)).await {
            Ok(_) => Waited::Answered,
            Err(_) => Waited::TimedOut,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).expect("a client message")
    }

    fn initialize() -> ClientJsonRpcMessage {
        message(json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}
            }
        }))
    }

    #[tokio::test]
    async fn a_session_without_an_id_has_nothing_to_wait_for() {
        let stream = StandaloneStream::default();
        stream.initialized(is_initialize(&initialize()), None);
        let initialized = message(json!({
            "jsonrpc": "2.0",
            "method": "notifications/initialized"
        }));
        assert!(!is_initialize(&initialized));
        stream.initialized(is_initialize(&initialized), Some("s"));
        assert_eq!(stream.wait(Duration::ZERO).await, Waited::NotExpected);
    }

    #[tokio::test]
    async fn the_wait_ends_when_the_get_is_answered_or_at_the_limit() {
        let stream = StandaloneStream::default();
        stream.initialized(is_initialize(&initialize()), Some("s"));
        assert_eq!(
            stream.wait(Duration::from_millis(20)).await,
            Waited::TimedOut
        );
        assert!(stream.opening(Some("s"), Some("event-1")).is_none());
        assert!(stream.opening(None, None).is_none());
        let opening = stream.opening(Some("s"), None).expect("the standalone GET");
        let waiting = tokio::spawn({
            let stream = stream.clone();
            async move { stream.wait(Duration::from_secs(60)).await }
        });
        drop(opening);
        assert_eq!(waiting.await.expect("no panic"), Waited::Answered);
        assert_eq!(stream.wait(Duration::ZERO).await, Waited::Answered);
    }
}
