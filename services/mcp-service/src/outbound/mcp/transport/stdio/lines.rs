//! A stdio server's output, with a response too long to accept answered as
//! its request's own error.
//!
//! rmcp drops a line longer than its bound and keeps the session, but the
//! request that line answered then waits until its timeout. This reader
//! passes every byte on unchanged and watches line lengths: after a line
//! over the bound that is a response, it adds one short line, the JSON-RPC
//! error "too large" for that response's id (the marked error of
//! [`super::super::streamable_http::capped`]), so the call ends at once with
//! the right message.
//! Only the first and last bytes of a line are kept, to find its id: rmcp
//! servers write the id first, the TypeScript SDK writes it last.

use std::{
    collections::VecDeque,
    io,
    pin::Pin,
    task::{Context, Poll, ready},
};

use tokio::io::{AsyncRead, ReadBuf};

use super::super::TOO_LARGE_MARKER;

/// Bytes kept from each end of a line to find its id.
const KEPT: usize = 256;
/// Bytes read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// Wraps a stdio server's output; see the module documentation.
#[derive(Debug)]
pub struct OversizeAnswering<R> {
    inner: R,
    limit: usize,
    line_len: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    out: VecDeque<u8>,
    chunk: Box<[u8]>,
}

impl<R> OversizeAnswering<R> {
    /// Watches `inner` for lines longer than `limit` (rmcp's line bound).
    pub fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            line_len: 0,
            head: Vec::with_capacity(KEPT),
            tail: VecDeque::with_capacity(KEPT),
            out: VecDeque::new(),
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.out.push_back(byte);
            if byte == b'\n' {
                // rmcp counts the newline too.
                if self.line_len.saturating_add(1) > self.limit
                    && let Some(answer) = answer(&self.head, self.tail.make_contiguous())
                {
                    self.out.extend(answer);
                }
                self.line_len = 0;
                self.head.clear();
                self.tail.clear();
                continue;
            }
            self.line_len = self.line_len.saturating_add(1);
            if self.head.len() < KEPT {
                self.head.push(byte);
            }
            if self.tail.len() == KEPT {
                self.tail.pop_front();
            }
            self.tail.push_back(byte);
        }
    }
}

/// Whether `haystack` contains `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The id value (a number or a plain string, as written) at the start of
/// `text`, after `"id"` and its colon.
fn id_value(text: &[u8]) -> Option<&[u8]> {
    let text = text
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let end = if text.first() == Some(&b'"') {
        let close = text[1..].iter().position(|b| *b == b'"')? + 2;
        if contains(&text[..close], b"\\") {
            return None;
        }
        close
    } else {
        text.iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .unwrap_or(text.len())
    };
    (end > 0).then(|| &text[..end])
}

/// The error line answering a dropped response, from the line's first and
/// last bytes; `None` when it is not recognisably a response with an id.
fn answer(head: &[u8], tail: &[u8]) -> Option<Vec<u8>> {
    if !contains(head, b"\"result\"") || contains(head, b"\"method\"") {
        return None;
    }
    // Id first (rmcp): `{"jsonrpc":"2.0","id":7,"result":…`, before the result.
    let result_at = head.windows(8).position(|w| w == b"\"result\"")?;
    let from_head = head[..result_at]
        .windows(4)
        .position(|w| w == b"\"id\"")
        .and_then(|at| id_value(&head[at + 4..result_at]));
    // Id last (TypeScript SDK): `…,"jsonrpc":"2.0","id":7}` at the very end.
    let from_tail = || {
        let tail = tail.trim_ascii_end().strip_suffix(b"}")?;
        let at = tail.windows(4).rposition(|w| w == b"\"id\"")?;
        let value = id_value(&tail[at + 4..])?;
        let rest = tail[at + 4..].trim_ascii();
        (rest.strip_prefix(b":")?.trim_ascii() == value).then_some(value)
    };
    let id = from_head.or_else(from_tail)?;
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":-32603,\"message\":\"the result is too large\",\"data\":{{\"{TOO_LARGE_MARKER}\":true}}}}}}\n",
        String::from_utf8_lossy(id)
    )
    .into_bytes();
    line.shrink_to_fit();
    Some(line)
}

impl<R: AsyncRead + Unpin> AsyncRead for OversizeAnswering<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.out.is_empty() {
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            if let Poll::Ready(Ok(())) = polled {
                this.observe(&chunk[..filled]);
            }
            this.chunk = chunk;
            ready!(polled)?;
            if filled == 0 {
                return Poll::Ready(Ok(()));
            }
        }
        let (first, _) = this.out.as_slices();
        let n = first.len().min(buf.remaining());
        buf.put_slice(&first[..n]);
        this.out.drain(..n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    async fn through(input: &[u8], limit: usize) -> String {
        let mut reader = OversizeAnswering::new(input, limit);
        let mut out = String::new();
        reader.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn short_lines_pass_unchanged() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"x\":1}\n";
        assert_eq!(through(input, 100).await.as_bytes(), input);
    }

    #[tokio::test]
    async fn a_long_response_with_its_id_first_is_answered_after_it() {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"text\":\"{}\"}}}}\n",
            "x".repeat(1000)
        );
        let out = through(format!("{line}{{\"next\":1}}\n").as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        let error: serde_json::Value = serde_json::from_str(lines[1]).expect("json");
        assert_eq!(error["id"], 7);
        assert_eq!(error["error"]["data"][TOO_LARGE_MARKER], true);
        assert_eq!(lines[2], "{\"next\":1}");
    }

    #[tokio::test]
    async fn a_long_response_with_its_id_last_is_answered() {
        let line = format!(
            "{{\"result\":{{\"items\":[{{\"id\":3}}],\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":\"req-9\"}}\n",
            "x".repeat(1000)
        );
        let out = through(line.as_bytes(), 100).await;
        let error: serde_json::Value =
            serde_json::from_str(out.lines().nth(1).expect("an answer")).expect("json");
        assert_eq!(error["id"], "req-9");
    }

    #[tokio::test]
    async fn a_long_request_or_notification_is_not_answered() {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":{{\"result\":\"{}\"}}}}\n",
            "x".repeat(1000)
        );
        assert_eq!(through(line.as_bytes(), 100).await.lines().count(), 1);
    }
}
