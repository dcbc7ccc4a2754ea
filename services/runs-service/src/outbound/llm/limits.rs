//! The limits of one model call once its response has started: a provider
//! (or whatever answers at its address) may stream forever, stall, or send
//! one enormous event, and none of that may hold a run or grow memory
//! without bound.

use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt as _};

use crate::domain::model::{ModelError, StreamLimit};

/// Default for [`StreamLimits::idle_timeout`]: long enough for a model that
/// thinks before it writes, and for the pings of providers that send them.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default for [`StreamLimits::call_timeout`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Default for [`StreamLimits::max_response_bytes`]: far above what any
/// output-token limit lets a model write.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 << 20;
/// Default for [`StreamLimits::max_event_bytes`].
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// How long and how large one model call may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Longest wait for the next server-sent event once the response has
    /// started.
    pub idle_timeout: Duration,
    /// Longest time for the whole call, from the request to the last event,
    /// retries of the request included.
    pub call_timeout: Duration,
    /// Most bytes of text and tool-call arguments in one answer.
    pub max_response_bytes: usize,
    /// Most bytes of one server-sent event (its lines, without line ends),
    /// which is what the stream parser buffers.
    pub max_event_bytes: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

/// What an answer may still grow by; decoders charge text and tool-call
/// arguments to it as they arrive, before they keep them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseBudget {
    limit: usize,
    used: usize,
}

impl ResponseBudget {
    pub(crate) fn new(limit: usize) -> Self {
        Self { limit, used: 0 }
    }

    /// Charges `bytes`; an error once the answer would pass the limit.
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), ModelError> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            Err(ModelError::Limit(StreamLimit::ResponseBytes(self.limit)))
        } else {
            Ok(())
        }
    }
}

/// Where a byte stream is within server-sent events, to bound the event the
/// parser is buffering.
#[derive(Debug, Clone, Copy)]
struct EventMeter {
    limit: usize,
    /// Bytes of the current event's lines.
    event: usize,
    /// Bytes of the current line.
    line: usize,
    /// The last byte was a carriage return, so a line feed right after it
    /// ends nothing more.
    after_cr: bool,
}

impl EventMeter {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            event: 0,
            line: 0,
            after_cr: false,
        }
    }

    /// Follows `chunk`; an error once one event passes the limit. Lines end
    /// at CR, LF or CRLF; an empty line ends an event.
    fn feed(&mut self, chunk: &[u8]) -> Result<(), ModelError> {
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    if self.line == 0 {
                        self.event = 0;
                    }
                    self.line = 0;
                }
                _ => {
                    self.after_cr = false;
                    self.line += 1;
                    self.event += 1;
                    if self.event > self.limit {
                        return Err(ModelError::Limit(StreamLimit::EventBytes(self.limit)));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `body` with every server-sent event bounded to `limit` bytes: the stream
/// fails at the first byte past it, before the parser buffers more.
pub(crate) fn bounded_events<E: Send + 'static>(
    body: impl Stream<Item = Result<Bytes, E>> + Send + 'static,
    limit: usize,
) -> impl Stream<Item = Result<Bytes, BoundedError<E>>> + Send + 'static {
    let mut meter = EventMeter::new(limit);
    let mut failed = false;
    body.map(move |item| {
        let chunk = item.map_err(BoundedError::Body)?;
        meter.feed(&chunk).map_err(BoundedError::Limit)?;
        Ok(chunk)
    })
    .take_while(move |item| {
        // Nothing after the first error: the parser would otherwise go on
        // with the bytes after the oversized event.
        let go = !failed;
        failed |= item.is_err();
        futures::future::ready(go)
    })
}

/// A failure of a [`bounded_events`] stream.
#[derive(Debug)]
pub(crate) enum BoundedError<E> {
    /// Reading the body failed.
    Body(E),
    /// An event passed the limit.
    Limit(ModelError),
}

impl<E: std::fmt::Display> std::fmt::Display for BoundedError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Body(error) => error.fmt(f),
            Self::Limit(error) => error.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for BoundedError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Body(error) => Some(error),
            Self::Limit(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(limit: usize, chunks: &[&str]) -> Result<(), ModelError> {
        let mut meter = EventMeter::new(limit);
        chunks
            .iter()
            .try_for_each(|chunk| meter.feed(chunk.as_bytes()))
    }

    #[test]
    fn events_are_measured_across_lines_and_chunks() {
        assert!(fed(10, &["data: 1234\n\n", "data: 1234\r\n\r\n"]).is_ok());
        // Two lines of one event count together.
        assert!(fed(10, &["data: 12\n", "data: 34\n\n"]).is_err());
        // CR alone ends lines too, and CRLF is one line end, not two.
        assert!(fed(10, &["data:1\r\rdata:2\r\n", "data:3\r\n\r\n"]).is_err());
        assert!(fed(10, &["data:1\r\r", "data:2\r\r"]).is_ok());
        // A line without an end is the worst case.
        assert_eq!(
            fed(10, &["data: 12345", "6789"]),
            Err(ModelError::Limit(StreamLimit::EventBytes(10)))
        );
    }

    #[test]
    fn the_budget_refuses_the_byte_past_its_limit() {
        let mut budget = ResponseBudget::new(10);
        assert!(budget.charge(6).is_ok());
        assert!(budget.charge(4).is_ok());
        assert_eq!(
            budget.charge(1),
            Err(ModelError::Limit(StreamLimit::ResponseBytes(10)))
        );
    }
}
