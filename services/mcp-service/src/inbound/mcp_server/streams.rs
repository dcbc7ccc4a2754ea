//! [`Streams`]: the endpoint's long-lived streams counted, each holding a
//! slot of its organization and of the process for exactly its life.
//!
//! Two kinds of request open a stream that lasts as long as the client
//! keeps it: `subscriptions/listen` (2026-07-28, stateless) and a
//! session's GET (initialize era; also a GET resuming a stream with
//! `Last-Event-ID`). Each holds a socket, a task and its buffers for as
//! long as the client likes, so each is counted against three caps: the
//! process's (`SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS`), its organization's
//! (`..._MAX_STREAMS_PER_ORG`, well below the process's, so that one
//! organization at its cap leaves most of the process to the others), and,
//! for a GET, its session's (`..._MAX_STREAMS_PER_SESSION`: the
//! specification lets a client keep a GET stream open for the server's own
//! messages; one, and one more while a client reconnects, is all it
//! needs).
//!
//! Streams have a budget of their own rather than the organization's calls
//! in flight ([`switchboard_server::CallLimits`], shared with gRPC): a
//! stream is idle nearly all its life, and a few listeners of each user
//! would otherwise take the slots their organization's tool calls need,
//! starving every call. A call is bounded by its deadline, a stream by
//! nothing but its client: it is the number of streams, not their work,
//! that needs a bound.
//!
//! A slot is an RAII [`StreamSlot`] held in the stream's HTTP response
//! body, which ends when the stream does (the session closed, the server
//! stopping) and is dropped when the client goes: exactly the stream's
//! life, whatever ends it.
//!
//! A refusal is said before the stream begins. A listen request is
//! answered with a JSON-RPC error on that request, shaped as the refusals
//! of [`super::admission`] (`data.reason`, `data.retryAfterMs`), for the
//! reasons given there. A GET, which carries no JSON-RPC request, is
//! answered `409 Conflict` over its session's cap (the session already has
//! its streams; retrying helps only once one closes), `429 Too Many
//! Requests` over its organization's and `503 Service Unavailable` over
//! the process's, each with `Retry-After` and the same error as its body.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use axum::{
    body::Body,
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::ErrorData;
use serde_json::{Value, json};
use switchboard_proto::common::v1::ErrorReason;
use switchboard_server::HeldBody;

use super::{admission::LIMIT_ERROR_CODE, caller::Admitted};

/// What a listen request's body holds, looked for before it is parsed.
const LISTEN: &[u8] = b"subscriptions/listen";
/// How long a client refused a stream at its organization's or its
/// session's cap should wait: a slot comes free only when a stream closes.
const CAPPED_RETRY_MS: u64 = 5000;
/// How long a client refused a stream at the process's cap should wait.
const OVERLOADED_RETRY_MS: u64 = 1000;

/// The caps on open streams.
#[derive(Debug, Clone, Copy)]
pub(super) struct StreamLimits {
    /// Most streams open at once in the process.
    pub max: usize,
    /// Most streams of one organization open at once.
    pub max_per_org: usize,
    /// Most GET streams of one session open at once.
    pub max_per_session: usize,
}

/// The streams open in the process, by organization and by session.
#[derive(Debug)]
pub(super) struct Streams {
    limits: StreamLimits,
    body_limit: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    open: usize,
    by_org: HashMap<String, usize>,
    by_session: HashMap<String, usize>,
}

/// Which cap refused a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamRefusal {
    /// The process has this many streams open.
    Process(usize),
    /// The organization has this many streams open.
    Organization(usize),
    /// The session has this many GET streams open.
    Session(usize),
}

/// One open stream's place, given back when dropped.
#[derive(Debug)]
pub(super) struct StreamSlot {
    streams: Arc<Streams>,
    org: String,
    session: Option<String>,
}

impl Streams {
    /// No streams open yet; a request body is read up to `body_limit`
    /// bytes (the endpoint's) to tell a listen request.
    pub fn new(limits: StreamLimits, body_limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limits,
            body_limit,
            counts: Mutex::default(),
        })
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a stream of `org`, a GET of `session` when given, or the
    /// cap that refuses it (the narrowest first: the one the client can
    /// act on).
    pub fn open(
        self: &Arc<Self>,
        org: &str,
        session: Option<&str>,
    ) -> Result<StreamSlot, StreamRefusal> {
        let mut counts = self.counts();
        let of_session = session.map_or(0, |id| counts.by_session.get(id).copied().unwrap_or(0));
        if session.is_some() && of_session >= self.limits.max_per_session {
            return Err(StreamRefusal::Session(self.limits.max_per_session));
        }
        if counts.by_org.get(org).copied().unwrap_or(0) >= self.limits.max_per_org {
            return Err(StreamRefusal::Organization(self.limits.max_per_org));
        }
        if counts.open >= self.limits.max {
            return Err(StreamRefusal::Process(self.limits.max));
        }
        counts.open += 1;
        *counts.by_org.entry(org.to_owned()).or_default() += 1;
        if let Some(id) = session {
            *counts.by_session.entry(id.to_owned()).or_default() += 1;
        }
        Ok(StreamSlot {
            streams: Arc::clone(self),
            org: org.to_owned(),
            session: session.map(str::to_owned),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut counts = self.streams.counts();
        counts.open = counts.open.saturating_sub(1);
        release(&mut counts.by_org, &self.org);
        if let Some(id) = &self.session {
            release(&mut counts.by_session, id);
        }
    }
}

/// One fewer under `key`; the entry goes at zero, so that the maps hold
/// only what has streams open.
fn release(counts: &mut HashMap<String, usize>, key: &str) {
    if let Some(count) = counts.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl StreamRefusal {
    fn message(self) -> String {
        match self {
            Self::Process(max) => {
                format!("the endpoint has {max} MCP streams open, its limit; retry with backoff")
            }
            Self::Organization(max) => {
                format!("the organization has {max} MCP streams open, its limit")
            }
            Self::Session(max) => format!("the session has {max} GET streams open, its limit"),
        }
    }

    fn reason(self) -> ErrorReason {
        match self {
            Self::Process(_) => ErrorReason::Unavailable,
            Self::Organization(_) | Self::Session(_) => ErrorReason::ResourceExhausted,
        }
    }

    fn retry_after_ms(self) -> u64 {
        match self {
            Self::Process(_) => OVERLOADED_RETRY_MS,
            Self::Organization(_) | Self::Session(_) => CAPPED_RETRY_MS,
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Self::Process(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Organization(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Session(_) => StatusCode::CONFLICT,
        }
    }

    /// The JSON-RPC error of the refusal.
    fn error_data(self) -> ErrorData {
        ErrorData::new(
            LIMIT_ERROR_CODE,
            self.message(),
            Some(json!({
                "reason": self.reason().as_str_name(),
                "retryAfterMs": self.retry_after_ms(),
            })),
        )
    }

    /// The answer to the listen request `id` refused, before its stream
    /// begins: a JSON-RPC error on that request.
    fn listen_response(self, id: Value) -> Response {
        let body = json!({ "jsonrpc": "2.0", "id": id, "error": self.error_data() });
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }

    /// The HTTP answer to a GET refused, before its stream begins.
    fn response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": self.error_data(),
        });
        let mut response = (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        let seconds = self.retry_after_ms().div_ceil(1000);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        response
    }
}

/// Holds a stream slot for each GET and each `subscriptions/listen` of an
/// admitted caller for as long as its response body lives, or answers the
/// refusal. Other requests pass.
pub(super) async fn hold(
    State(streams): State<Arc<Streams>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(org) = request
        .extensions()
        .get::<Admitted>()
        .map(|admitted| admitted.principal.org_id.clone())
    else {
        return next.run(request).await;
    };
    let (request, slot) = match *request.method() {
        Method::GET => {
            let session = request
                .headers()
                .get("mcp-session-id")
                .and_then(|id| id.to_str().ok());
            match streams.open(&org, session) {
                Ok(slot) => (request, slot),
                Err(refusal) => {
                    tracing::debug!(org = %org, reason = %refusal.message(), "MCP GET stream refused");
                    return refusal.response();
                }
            }
        }
        Method::POST => {
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, streams.body_limit).await else {
                return StatusCode::PAYLOAD_TOO_LARGE.into_response();
            };
            let request = Request::from_parts(parts, Body::from(bytes.clone()));
            let Some(id) = listen_id(&bytes) else {
                return next.run(request).await;
            };
            match streams.open(&org, None) {
                Ok(slot) => (request, slot),
                Err(refusal) => {
                    tracing::debug!(org = %org, reason = %refusal.message(), "MCP listen stream refused");
                    return refusal.listen_response(id);
                }
            }
        }
        _ => return next.run(request).await,
    };
    next.run(request)
        .await
        .map(|body| Body::new(HeldBody::new(body, slot)))
}

/// The id of `body` when it is a `subscriptions/listen` request.
fn listen_id(body: &[u8]) -> Option<Value> {
    // Most requests are something else: they are not parsed twice.
    if !body.windows(LISTEN.len()).any(|window| window == LISTEN) {
        return None;
    }
    let message: Value = serde_json::from_slice(body).ok()?;
    (message.get("method")?.as_str()? == "subscriptions/listen")
        .then(|| message.get("id").cloned())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(max: usize, max_per_org: usize, max_per_session: usize) -> Arc<Streams> {
        Streams::new(
            StreamLimits {
                max,
                max_per_org,
                max_per_session,
            },
            1024,
        )
    }

    #[test]
    fn each_cap_refuses_at_its_count_and_a_dropped_slot_makes_room() {
        let streams = streams(4, 3, 1);
        let first = streams.open("a", Some("s1")).expect("the first");
        assert_eq!(
            streams.open("a", Some("s1")).map(drop),
            Err(StreamRefusal::Session(1))
        );
        let _second = streams.open("a", Some("s2")).expect("another session's");
        let _third = streams.open("a", None).expect("a listen stream");
        assert_eq!(
            streams.open("a", None).map(drop),
            Err(StreamRefusal::Organization(3))
        );
        let _other = streams.open("b", None).expect("another organization's");
        assert_eq!(
            streams.open("c", None).map(drop),
            Err(StreamRefusal::Process(4))
        );
        drop(first);
        let _again = streams.open("a", Some("s1")).expect("room again");
    }

    #[test]
    fn the_counts_forget_what_has_no_stream_open() {
        let streams = streams(10, 10, 10);
        drop(streams.open("a", Some("s")).expect("a slot"));
        let counts = streams.counts();
        assert_eq!(counts.open, 0);
        assert!(counts.by_org.is_empty() && counts.by_session.is_empty());
    }

    #[test]
    fn only_a_listen_request_is_told_by_its_id() {
        let listen =
            json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {}});
        assert_eq!(listen_id(listen.to_string().as_bytes()), Some(json!(7)));
        let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                          "params": {"name": "subscriptions/listen"}});
        assert_eq!(listen_id(call.to_string().as_bytes()), None);
        assert_eq!(listen_id(b"not json subscriptions/listen"), None);
    }

    #[test]
    fn a_refusal_says_why_and_when_to_retry() {
        let error = StreamRefusal::Organization(2).error_data();
        assert_eq!(error.code, LIMIT_ERROR_CODE);
        assert_eq!(
            error.data,
            Some(json!({ "reason": "ERROR_REASON_RESOURCE_EXHAUSTED", "retryAfterMs": 5000 }))
        );
        let response = StreamRefusal::Session(1).response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(response.headers()[header::RETRY_AFTER], "5");
        assert_eq!(
            StreamRefusal::Process(9).response().status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
