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

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use serde_json::Value;
use tokio::sync::mpsc;

use super::{integration::OrgId, ports::SessionScope};

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

/// The upstream session whose notices a client session hears.
type Line = (OrgId, SessionScope);

/// The client sessions registered for each line, each with its
/// registration's id.
type Lines = HashMap<Line, Vec<(u64, mpsc::Sender<Notice>)>>;

/// The client sessions hearing the notices of upstream sessions, by the
/// upstream session's organization and scope.
#[derive(Debug)]
pub struct ClientNotices {
    lines: Mutex<Lines>,
    next: AtomicU64,
    capacity: usize,
}

impl ClientNotices {
    /// No client session yet; each holds at most `capacity` notices not
    /// yet passed on (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            lines: Mutex::default(),
            next: AtomicU64::new(0),
            capacity: capacity.max(1),
        }
    }

    fn lines(&self) -> MutexGuard<'_, Lines> {
        // A panic while holding the lock leaves a map that is still valid.
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a client session for the upstream sessions of `scope` in
    /// `org` while the returned guard lives; the notices come out of the
    /// receiver.
    pub fn open(
        self: &Arc<Self>,
        org: &OrgId,
        scope: &SessionScope,
    ) -> (NoticeLine, mpsc::Receiver<Notice>) {
        let (sender, receiver) = mpsc::channel(self.capacity);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let line = (org.clone(), scope.clone());
        self.lines()
            .entry(line.clone())
            .or_default()
            .push((id, sender));
        let open = NoticeLine {
            notices: self.clone(),
            line,
            id,
        };
        (open, receiver)
    }

    /// Passes `notice`, sent on the upstream session of `scope` in `org`,
    /// to the client sessions registered for it; false when none took it
    /// (none registered, or each at its capacity).
    pub fn tell(&self, org: &OrgId, scope: &SessionScope, notice: Notice) -> bool {
        let lines = self.lines();
        let Some(clients) = lines.get(&(org.clone(), scope.clone())) else {
            return false;
        };
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
    }

    fn close(&self, line: &Line, id: u64) {
        let mut lines = self.lines();
        if let Some(clients) = lines.get_mut(line) {
            clients.retain(|(own, _)| *own != id);
            if clients.is_empty() {
                lines.remove(line);
            }
        }
    }
}

/// A client session registered to hear notices; unregistered when dropped.
#[derive(Debug)]
pub struct NoticeLine {
    notices: Arc<ClientNotices>,
    line: Line,
    id: u64,
}

impl Drop for NoticeLine {
    fn drop(&mut self) {
        self.notices.close(&self.line, self.id);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

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
        assert!(notices.lines().is_empty(), "the line was closed");
        assert!(!notices.tell(&org("a"), &scope, log(5)));
    }
}
