//! What an integration's server tells one client session of the endpoint,
//! outside any list change or question: its log messages and its updates
//! of the resources the client subscribed to, sent on the upstream session
//! the endpoint opened for that client session.
//!
//! An upstream session of a client session is that session's alone: it is
//! found by the client's organization and upstream session scope (which
//! holds the client's user and MCP session id), so a notice reaches the
//! client session whose session the server sent it on, and no other.
//!
//! Each client session holds at most its capacity of notices it has not
//! passed on yet; one past it is dropped (a log line or an update the
//! client did not keep up with), never queued without bound.

use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    bounds::{DEFAULT_MAX_SERVER_TEXT_BYTES, json_within},
    client_lines::{ClientLines, LineGuard},
    integration::OrgId,
    ports::SessionScope,
    server_text::bounded,
};

/// What a server told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// `notifications/message`: a log message.
    Log,
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated,
}

/// One notice, its params as the server sent them (wire JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// What it is.
    pub kind: NoticeKind,
    /// The notification's params.
    pub params: Value,
}

/// The most bytes of one notice (a log message, a resource update) held
/// for a client session, as JSON: four times the text bound, so a log
/// message's structured `data` keeps its shape when it is small.
pub const MAX_NOTICE_BYTES: usize = 4 * DEFAULT_MAX_SERVER_TEXT_BYTES;

/// `notice` within [`MAX_NOTICE_BYTES`]: a log message whose `data` is
/// larger gets it as text, cut and marked; a notice still past the bound
/// (a resource URI past its own) is dropped, `None`.
fn bounded_notice(mut notice: Notice) -> Option<Notice> {
    if json_within(&notice.params, MAX_NOTICE_BYTES) {
        return Some(notice);
    }
    if notice.kind == NoticeKind::Log
        && let Some(params) = notice.params.as_object_mut()
    {
        for field in ["data", "logger"] {
            if let Some(value) = params.get_mut(field) {
                let text = match &mut *value {
                    Value::String(text) => std::mem::take(text),
                    other => other.to_string(),
                };
                *value = Value::String(bounded(&text, DEFAULT_MAX_SERVER_TEXT_BYTES).into_owned());
            }
        }
    }
    json_within(&notice.params, MAX_NOTICE_BYTES).then_some(notice)
}

/// The client sessions hearing the notices of upstream sessions, by the
/// upstream session's organization and scope.
pub type ClientNotices = ClientLines<Notice>;

/// A client session registered to hear notices; unregistered when dropped.
pub type NoticeLine = LineGuard<Notice>;

impl ClientLines<Notice> {
    /// Passes `notice`, sent on the upstream session of `scope` in `org`,
    /// to the client sessions registered for it; false when none took it
    /// (none registered, or each at its capacity).
    /// A notice past [`MAX_NOTICE_BYTES`] is cut to it first, or dropped.
    ///
    pub fn tell(&self, org: &OrgId, scope: &SessionScope, notice: Notice) -> bool {
        let Some(notice) = bounded_notice(notice) else {
            tracing::debug!("a notice past its bound: dropped");
            return false;
        };
        self.with_clients(org, scope, |clients| {
            let mut told = false;
            for (_, sender) in clients {
                match sender.try_send(notice.clone()) {
                    Ok(()) => told = true,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        tracing::debug!(kind = ?notice.kind, "a client session is behind: notice dropped");
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {}
                }
            }
            told
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    #[test]
    fn a_log_notice_past_the_bound_keeps_its_data_as_cut_text() {
        let notice = Notice {
            kind: NoticeKind::Log,
            params: json!({"level": "info", "data": {"blob": "x".repeat(100_000)}}),
        };
        let bounded = bounded_notice(notice).unwrap();
        let data = bounded.params["data"].as_str().unwrap();
        assert!(
            data.len() < DEFAULT_MAX_SERVER_TEXT_BYTES + 64,
            "{}",
            data.len()
        );
        assert!(data.ends_with("bytes]"), "{data}");
        assert_eq!(bounded.params["level"], "info");
        let update = Notice {
            kind: NoticeKind::ResourceUpdated,
            params: json!({"uri": "x".repeat(100_000)}),
        };
        assert_eq!(bounded_notice(update), None);
    }

    fn org(name: &str) -> OrgId {
        OrgId(name.to_owned())
    }

    fn log(n: i64) -> Notice {
        Notice {
            kind: NoticeKind::Log,
            params: json!({"level": "info", "data": n}),
        }
    }

    #[tokio::test]
    async fn a_notice_reaches_only_the_client_session_of_its_upstream_session() {
        let notices = Arc::new(ClientNotices::new(4));
        let ours = SessionScope::new("ada", "mcp-session:1");
        let (_line, mut heard) = notices.open(&org("a"), &ours);
        assert!(notices.tell(&org("a"), &ours, log(1)));
        assert_eq!(heard.recv().await, Some(log(1)));
        // The same scope in another organization, and another session of
        // the same organization, are not this client's.
        assert!(!notices.tell(&org("b"), &ours, log(2)));
        let theirs = SessionScope::new("ada", "mcp-session:2");
        assert!(!notices.tell(&org("a"), &theirs, log(3)));
        assert!(heard.try_recv().is_err(), "nothing else was heard");
    }

    #[test]
    fn notices_past_a_client_sessions_capacity_are_dropped_and_a_closed_line_forgotten() {
        let notices = Arc::new(ClientNotices::new(2));
        let scope = SessionScope::new("ada", "mcp-session:1");
        let (line, mut heard) = notices.open(&org("a"), &scope);
        assert!(notices.tell(&org("a"), &scope, log(1)));
        assert!(notices.tell(&org("a"), &scope, log(2)));
        assert!(
            !notices.tell(&org("a"), &scope, log(3)),
            "the third notice is past the capacity"
        );
        assert_eq!(heard.try_recv().ok(), Some(log(1)));
        assert_eq!(heard.try_recv().ok(), Some(log(2)));
        assert!(heard.try_recv().is_err(), "the dropped notice never came");
        assert!(notices.tell(&org("a"), &scope, log(4)), "room again");
        drop(line);
        assert!(notices.is_empty(), "the line was closed");
        assert!(!notices.tell(&org("a"), &scope, log(5)));
    }
}
