//! The clients of the endpoint registered to hear one upstream session:
//! by the session's organization and scope, each with a channel of bounded
//! capacity, unregistered when its guard is dropped. A server's questions
//! ([`super::downstream`]) and its notices ([`super::notices`]) reach their
//! client through it, so who hears a session is decided in one place.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use tokio::sync::mpsc;

use super::{integration::OrgId, ports::SessionScope};

/// The upstream session a client hears.
type Line = (OrgId, SessionScope);

/// A registered client: its registration's id and where its items go.
pub type Client<T> = (u64, mpsc::Sender<T>);

/// The clients registered for each upstream session, carrying `T`.
#[derive(Debug)]
pub struct ClientLines<T> {
    lines: Mutex<HashMap<Line, Vec<Client<T>>>>,
    next: AtomicU64,
    capacity: usize,
}

impl<T> ClientLines<T> {
    /// No client yet; each holds at most `capacity` items not yet taken
    /// (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            lines: Mutex::default(),
            next: AtomicU64::new(0),
            capacity: capacity.max(1),
        }
    }

    fn lines(&self) -> MutexGuard<'_, HashMap<Line, Vec<Client<T>>>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a client for the upstream session of `scope` in `org`
    /// while the returned guard lives; what it is sent comes out of the
    /// receiver.
    pub fn open(
        self: &Arc<Self>,
        org: &OrgId,
        scope: &SessionScope,
    ) -> (LineGuard<T>, mpsc::Receiver<T>) {
        let (sender, receiver) = mpsc::channel(self.capacity);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let line = (org.clone(), scope.clone());
        self.lines()
            .entry(line.clone())
            .or_default()
            .push((id, sender));
        let guard = LineGuard {
            lines: self.clone(),
            line,
            id,
        };
        (guard, receiver)
    }

    /// `pick` over the clients registered for `scope` in `org`, oldest
    /// first (none when nobody is), under the registry's lock.
    pub fn with_clients<R>(
        &self,
        org: &OrgId,
        scope: &SessionScope,
        pick: impl FnOnce(&[Client<T>]) -> R,
    ) -> R {
        let lines = self.lines();
        let clients = lines.get(&(org.clone(), scope.clone()));
        pick(clients.map_or(&[], Vec::as_slice))
    }

    /// Whether no client is registered at all.
    pub fn is_empty(&self) -> bool {
        self.lines().is_empty()
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

/// A registered client; unregistered when dropped.
#[derive(Debug)]
pub struct LineGuard<T> {
    lines: Arc<ClientLines<T>>,
    line: Line,
    id: u64,
}

impl<T> Drop for LineGuard<T> {
    fn drop(&mut self) {
        self.lines.close(&self.line, self.id);
    }
}
