//! Which connections a listener holds, which of them authenticated, and
//! which one is closed to admit a new one at a cap.
//!
//! At a cap the oldest unauthenticated connection is evicted rather than the
//! new one refused: refusing would let a flood that fills the cap lock every
//! new client out until its connections time out, while evicting makes the
//! flood shorten its own connections' lives. A client that authenticates on
//! its first request leaves the evictable set within one round trip, long
//! before it is the oldest; per IP address the oldest of that address goes
//! first, so one source cannot cycle out everyone else's.

use std::{
    collections::{BTreeMap, HashMap},
    net::IpAddr,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};

use super::ConnectionCaps;

/// The connections of one listener.
#[derive(Debug)]
pub(crate) struct Tracker {
    caps: ConnectionCaps,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    open: usize,
    /// Not yet authenticated, by id: the oldest first.
    unauthenticated: BTreeMap<u64, Arc<Connection>>,
    per_ip: HashMap<IpAddr, BTreeMap<u64, ()>>,
    per_org: HashMap<String, usize>,
}

/// One accepted connection's state, shared by its task and its requests.
#[derive(Debug)]
pub(crate) struct Connection {
    id: u64,
    ip: Option<IpAddr>,
    /// Requests in flight (a stream until it ends) and since when none is.
    activity: Mutex<(usize, Instant)>,
    /// Woken when a request starts or ends, or the connection is evicted.
    changed: Notify,
    evicted: AtomicBool,
    authenticated: AtomicBool,
    org: Mutex<Option<String>>,
}

/// A connection's place in its listener, given back when dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    connection: Arc<Connection>,
    tracker: Arc<Tracker>,
}

/// The connection a request came on, in the request's extensions: the
/// authentication layer marks it authenticated.
#[derive(Debug, Clone)]
pub struct ConnectionHandle {
    connection: Arc<Connection>,
    tracker: Arc<Tracker>,
}

impl ConnectionHandle {
    /// Marks the connection authenticated for organization `org` (a request
    /// on it carried a verified token): it leaves the evictable set, unless
    /// `org` already holds its cap of authenticated connections.
    pub fn authenticated(&self, org: &str) {
        if self.connection.authenticated.load(Ordering::Acquire) {
            return;
        }
        self.tracker.authenticate(&self.connection, org);
    }

    /// Whether a request on the connection authenticated it.
    pub fn is_authenticated(&self) -> bool {
        self.connection.authenticated.load(Ordering::Acquire)
    }
}

/// A request in flight on a connection; the connection is idle once every
/// one is dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Connection>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut activity = lock(&self.0.activity);
        activity.0 = activity.0.saturating_sub(1);
        if activity.0 == 0 {
            activity.1 = Instant::now();
        }
        drop(activity);
        self.0.changed.notify_one();
    }
}

/// Why a connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Close {
    /// Idle past its timeout.
    Idle,
    /// Evicted at a cap.
    Evicted,
}

impl Tracker {
    pub(crate) fn new(caps: ConnectionCaps) -> Arc<Self> {
        Arc::new(Self {
            caps,
            state: Mutex::new(State::default()),
        })
    }

    /// Registers a new connection from `ip`, evicting the oldest
    /// unauthenticated one where a cap is reached; `None` when every
    /// connection is authenticated and the listener is full.
    pub(crate) fn admit(self: &Arc<Self>, ip: Option<IpAddr>) -> Option<Registration> {
        let mut state = lock(&self.state);
        if let Some(ip) = ip {
            let from_ip = state.per_ip.get(&ip).map_or(0, BTreeMap::len);
            if from_ip >= self.caps.max_unauthenticated_per_ip {
                let oldest = state
                    .per_ip
                    .get(&ip)
                    .and_then(|ids| ids.keys().next().copied());
                state.evict(oldest);
            }
        }
        if state.unauthenticated.len() >= self.caps.max_unauthenticated {
            let oldest = state.unauthenticated.keys().next().copied();
            state.evict(oldest);
        }
        if state.open >= self.caps.max_connections {
            let oldest = state.unauthenticated.keys().next().copied();
            if !state.evict(oldest) {
                return None;
            }
        }
        state.next_id += 1;
        let connection = Arc::new(Connection {
            id: state.next_id,
            ip,
            activity: Mutex::new((0, Instant::now())),
            changed: Notify::new(),
            evicted: AtomicBool::new(false),
            authenticated: AtomicBool::new(false),
            org: Mutex::new(None),
        });
        state.open += 1;
        state
            .unauthenticated
            .insert(connection.id, connection.clone());
        if let Some(ip) = ip {
            state
                .per_ip
                .entry(ip)
                .or_default()
                .insert(connection.id, ());
        }
        Some(Registration {
            connection,
            tracker: self.clone(),
        })
    }

    fn authenticate(&self, connection: &Arc<Connection>, org: &str) {
        let mut state = lock(&self.state);
        if connection.authenticated.load(Ordering::Acquire)
            || connection.evicted.load(Ordering::Acquire)
        {
            return;
        }
        let count = state.per_org.entry(org.to_owned()).or_default();
        if *count >= self.caps.max_per_org {
            tracing::debug!(
                org,
                "organization at its connection cap; connection stays evictable"
            );
            return;
        }
        *count += 1;
        state.forget_unauthenticated(connection);
        *lock(&connection.org) = Some(org.to_owned());
        connection.authenticated.store(true, Ordering::Release);
    }

    fn remove(&self, connection: &Connection) {
        let mut state = lock(&self.state);
        state.open = state.open.saturating_sub(1);
        state.forget_unauthenticated(connection);
        if let Some(org) = lock(&connection.org).take()
            && let Some(count) = state.per_org.get_mut(&org)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.per_org.remove(&org);
            }
        }
    }
}

impl State {
    /// Evicts connection `id` if it is still unauthenticated; whether it was.
    fn evict(&mut self, id: Option<u64>) -> bool {
        let Some(connection) = id.and_then(|id| self.unauthenticated.get(&id).cloned()) else {
            return false;
        };
        self.forget_unauthenticated(&connection);
        connection.evicted.store(true, Ordering::Release);
        connection.changed.notify_one();
        tracing::debug!(remote_ip = ?connection.ip, "unauthenticated connection evicted at a cap");
        true
    }

    fn forget_unauthenticated(&mut self, connection: &Connection) {
        self.unauthenticated.remove(&connection.id);
        if let Some(ip) = connection.ip
            && let Some(ids) = self.per_ip.get_mut(&ip)
        {
            ids.remove(&connection.id);
            if ids.is_empty() {
                self.per_ip.remove(&ip);
            }
        }
    }
}

impl Registration {
    pub(crate) fn handle(&self) -> ConnectionHandle {
        ConnectionHandle {
            connection: self.connection.clone(),
            tracker: self.tracker.clone(),
        }
    }

    /// Resolves when the connection is to be closed: evicted, or with no
    /// request in flight for `first_request` (never authenticated) or
    /// `idle` (authenticated).
    pub(crate) async fn closing(&self, first_request: Duration, idle: Duration) -> Close {
        let connection = &self.connection;
        loop {
            let changed = connection.changed.notified();
            if connection.evicted.load(Ordering::Acquire) {
                return Close::Evicted;
            }
            let (in_flight, since) = *lock(&connection.activity);
            if in_flight > 0 {
                changed.await;
                continue;
            }
            let timeout = if connection.authenticated.load(Ordering::Acquire) {
                idle
            } else {
                first_request
            };
            tokio::select! {
                () = tokio::time::sleep_until(since + timeout) => {
                    let (in_flight, now_since) = *lock(&connection.activity);
                    if in_flight == 0 && now_since == since {
                        return Close::Idle;
                    }
                }
                () = changed => {}
            }
        }
    }
}

impl ConnectionHandle {
    /// Counts a request in flight until the returned guard is dropped.
    pub(crate) fn request_started(&self) -> InFlight {
        lock(&self.connection.activity).0 += 1;
        self.connection.changed.notify_one();
        InFlight(self.connection.clone())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.tracker.remove(&self.connection);
    }
}

/// The lock's data even if a holder panicked: every update leaves it whole.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
