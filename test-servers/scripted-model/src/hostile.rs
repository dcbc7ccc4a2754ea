//! Replies that misbehave once the response headers are out: streams that
//! never end, stall, or carry one enormous event. Clients use them to prove
//! that their stream limits hold.

use std::{convert::Infallible, time::Duration};

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;

/// A streamed reply that misbehaves after the headers (always streamed, also
/// when the request did not ask for a stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hostile {
    /// Text deltas of this piece, forever, as fast as the client reads.
    EndlessText(String),
    /// Text deltas of this piece, one per interval, forever: never idle,
    /// never large, never done.
    Trickle(String, Duration),
    /// One tool call whose arguments grow by this piece, forever.
    EndlessToolArguments(String),
    /// This text, then nothing more on an open connection until the server
    /// shuts down.
    Stall(String),
    /// One text delta of this many `x`s in a single event (no line breaks),
    /// then a normal end.
    HugeChunk(usize),
}

/// One server-sent event, rendered.
pub(crate) fn sse(name: Option<&str>, data: &str) -> Bytes {
    let mut event = String::with_capacity(data.len() + 32);
    if let Some(name) = name {
        event.push_str("event: ");
        event.push_str(name);
        event.push('\n');
    }
    event.push_str("data: ");
    event.push_str(data);
    event.push_str("\n\n");
    Bytes::from(event)
}

/// The events of a hostile reply, in the order they go out.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Sent first.
    pub(crate) head: Vec<Bytes>,
    /// Sent again and again after `head`, forever.
    pub(crate) repeat: Option<Bytes>,
    /// Pause before each repeated event.
    pub(crate) every: Option<Duration>,
    /// Sent after `head` when nothing repeats.
    pub(crate) tail: Vec<Bytes>,
    /// Keep the connection open without sending anything after the rest.
    pub(crate) stall: bool,
}

/// Streams `plan` as `text/event-stream` until it ends or `cancel` fires.
pub(crate) fn respond(plan: Plan, cancel: CancellationToken) -> Response {
    let Plan {
        head,
        repeat,
        every,
        tail,
        stall,
    } = plan;
    let endless = match (repeat, every) {
        (Some(event), Some(every)) => futures::stream::repeat(event)
            .then(move |event| async move {
                tokio::time::sleep(every).await;
                event
            })
            .boxed(),
        (Some(event), None) => futures::stream::repeat(event).boxed(),
        (None, _) => futures::stream::iter(tail).boxed(),
    };
    let silence = if stall {
        futures::stream::pending().boxed()
    } else {
        futures::stream::empty().boxed()
    };
    let events = futures::stream::iter(head)
        .chain(endless)
        .chain(silence)
        .take_until(cancel.cancelled_owned())
        .map(Ok::<_, Infallible>);
    let mut response = Response::new(Body::from_stream(events));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}
