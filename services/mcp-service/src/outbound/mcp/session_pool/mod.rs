//! Which live upstream MCP sessions are kept, for whom, and which is closed
//! to make room.
//!
//! A session is bound to an integration's configuration (its `updated_at`
//! version, so new credentials never reuse an old session), to its
//! organization and to a scope (one conversation of one user), so stateful
//! servers never see state cross between conversations, users or
//! organizations. Concurrent callers of one key share one connect.
//!
//! Scopes are chosen by callers, so their number is bounded. An
//! organization holds at most `max_sessions_per_org` sessions, of which at
//! most `max_stdio_sessions_per_org` stdio ones (each is a process): a new
//! scope beyond either closes the organization's own least recently used
//! idle session (of that kind), and is refused when all of them are in use.
//! The whole pool holds at most `max_sessions`: beyond it, the least
//! recently used idle session of the organization holding the most sessions
//! is closed, so a busy organization never pushes out a quieter one's.
//! Each organization's sessions are an LRU list, and organizations are
//! ordered by size, so admitting a session costs O(log organizations).
//!
//! An organization's sessions and stdio processes are also counted across
//! the replicas of mcp-service ([`shared`]): each session holds a lease,
//! and an organization whose leases on all replicas are at its limit gets
//! a new session on this replica only by closing one of its idle ones here.

use std::{
    collections::{BTreeSet, HashMap},
    future::Future,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use hashlink::LruCache;
use tokio::sync::OnceCell;

use crate::domain::{
    integration::{Integration, IntegrationId, OrgId},
    ports::{CallError, SessionScope},
};
use crate::outbound::mcp::sessions::Live;

mod shared;

use shared::{LeaseRefused, SessionLease};
pub use shared::{SessionQuotas, SharedSessions};

/// How many of an organization's least recently used sessions are looked at
/// for an idle one to close; a bound, so admitting stays O(1) per organization.
const IDLE_SEARCH: usize = 16;

/// When a refused caller should try again: sessions free up as calls end.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// What a session is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    org: OrgId,
    stdio: bool,
    integration: IntegrationId,
    version: i64,
    scope: SessionScope,
}

impl SessionKey {
    /// The key of `scope`'s session with `integration` as configured now.
    pub fn new(integration: &Integration, scope: &SessionScope) -> Self {
        Self {
            org: integration.org_id.clone(),
            stdio: integration.transport.runs_a_process(),
            integration: integration.id,
            version: integration.updated_at,
            scope: scope.clone(),
        }
    }
}

/// One pooled session: connected once, shared by every caller of its key.
#[derive(Debug, Default)]
pub struct Slot {
    live: OnceCell<Arc<Live>>,
    last_used: AtomicU64,
    /// The session's place in its organization's count across replicas,
    /// given back when the last holder of the session lets it go.
    _lease: Option<SessionLease>,
}

/// Pool limits.
#[derive(Debug, Clone, Copy)]
pub struct PoolLimits {
    /// Most sessions kept open in all.
    pub max_sessions: usize,
    /// Most sessions (and probes) one organization holds at once, unless
    /// the organization has a limit of its own.
    pub max_sessions_per_org: usize,
    /// Most stdio sessions (processes, probes included) one organization
    /// holds at once.
    pub max_stdio_sessions_per_org: usize,
    /// Sessions unused this long are closed.
    pub idle_timeout: Duration,
}

/// One organization's sessions, least recently used first, and its probes.
#[derive(Debug)]
struct OrgSessions {
    sessions: LruCache<SessionKey, Arc<Slot>>,
    probes: usize,
    /// Stdio sessions and probes among the above.
    stdio: usize,
}

impl Default for OrgSessions {
    fn default() -> Self {
        Self {
            sessions: LruCache::new_unbounded(),
            probes: 0,
            stdio: 0,
        }
    }
}

impl OrgSessions {
    fn count(&self) -> usize {
        self.sessions.len() + self.probes
    }

    fn insert(&mut self, key: SessionKey, slot: Arc<Slot>) {
        let stdio = key.stdio;
        if self.sessions.insert(key, slot).is_none() && stdio {
            self.stdio += 1;
        }
    }

    fn remove(&mut self, key: &SessionKey) -> Option<Arc<Slot>> {
        let removed = self.sessions.remove(key);
        if removed.is_some() && key.stdio {
            self.stdio = self.stdio.saturating_sub(1);
        }
        removed
    }

    /// Closes the least recently used session nobody is using (a stdio one
    /// when `stdio`), looking at the [`IDLE_SEARCH`] least recently used ones.
    fn close_one_idle(&mut self, stdio: bool) -> bool {
        let idle = self
            .sessions
            .iter()
            .filter(|(key, _)| key.stdio || !stdio)
            .take(IDLE_SEARCH)
            // The pool's own reference is the only one: no call is on it.
            .find(|(_, slot)| Arc::strong_count(slot) == 1)
            .map(|(key, _)| key.clone());
        idle.is_some_and(|key| self.remove(&key).is_some())
    }
}

/// Every organization's sessions.
#[derive(Debug, Default)]
struct Slots {
    orgs: HashMap<OrgId, OrgSessions>,
    /// `(count, organization)` of every organization holding any.
    by_count: BTreeSet<(usize, String)>,
    total: usize,
}

impl Slots {
    /// The pooled session of `key`, marked used.
    fn pooled(&mut self, key: &SessionKey) -> Option<Arc<Slot>> {
        let org = self.orgs.get_mut(&key.org)?;
        org.sessions.get(key).cloned()
    }

    /// Applies `change` to `org`'s sessions, keeping the counts in step.
    fn update<R>(&mut self, org: &OrgId, change: impl FnOnce(&mut OrgSessions) -> R) -> R {
        let entry = self.orgs.entry(org.clone()).or_default();
        let before = entry.count();
        let result = change(entry);
        let after = entry.count();
        if after == 0 {
            self.orgs.remove(org);
        }
        if before != after {
            self.by_count.remove(&(before, org.0.clone()));
            if after > 0 {
                self.by_count.insert((after, org.0.clone()));
            }
            self.total = self.total - before + after;
        }
        result
    }

    /// Makes room for one more session of `org` (a stdio one when
    /// `stdio`), or says why there is none.
    fn admit(&mut self, org: &OrgId, stdio: bool, limits: &PoolLimits) -> Result<(), CallError> {
        let (held, stdio_held) = self
            .orgs
            .get(org)
            .map_or((0, 0), |sessions| (sessions.count(), sessions.stdio));
        if stdio && stdio_held >= limits.max_stdio_sessions_per_org {
            return self.close_own(org, true, || {
                format!(
                    "the organization runs {stdio_held} stdio MCP servers, its limit, and all are in use"
                )
            });
        }
        if held >= limits.max_sessions_per_org {
            return self.close_own(org, false, || {
                format!(
                    "the organization has {held} open MCP sessions, its limit, and all are in use"
                )
            });
        }
        if self.total < limits.max_sessions {
            return Ok(());
        }
        let largest = self
            .by_count
            .last()
            .map(|(_, org)| OrgId(org.clone()))
            .unwrap_or_else(|| org.clone());
        if self.update(&largest, |sessions| sessions.close_one_idle(false)) {
            tracing::debug!(org_id = %largest, "session pool full: closed an idle session of the largest organization");
            return Ok(());
        }
        Err(CallError::Exhausted {
            message: format!(
                "mcp-service holds {} MCP sessions, its limit, and the largest organization's are all in use",
                self.total
            ),
            retry_after: RETRY_AFTER,
        })
    }

    /// Closes one of `org`'s own idle sessions to make room, or refuses
    /// with `refusal`.
    fn close_own(
        &mut self,
        org: &OrgId,
        stdio: bool,
        refusal: impl FnOnce() -> String,
    ) -> Result<(), CallError> {
        if self.update(org, |sessions| sessions.close_one_idle(stdio)) {
            tracing::debug!(org_id = %org, stdio, "organization at its session limit: closed its least recently used idle session");
            return Ok(());
        }
        Err(CallError::Exhausted {
            message: refusal(),
            retry_after: RETRY_AFTER,
        })
    }
}

#[derive(Debug)]
struct PoolInner {
    slots: Mutex<Slots>,
    limits: PoolLimits,
    epoch: Instant,
}

impl PoolInner {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        // A panic while holding the lock leaves maps that are still valid.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes sessions unused for the idle timeout: they are at the front of
    /// each organization's list, so only they are looked at.
    fn close_idle(&self) {
        let cutoff = self.now().saturating_sub(
            u64::try_from(self.limits.idle_timeout.as_millis()).unwrap_or(u64::MAX),
        );
        let mut slots = self.slots();
        let orgs: Vec<OrgId> = slots.orgs.keys().cloned().collect();
        let mut closed = 0;
        for org in orgs {
            closed += slots.update(&org, |org| {
                let mut closed = 0;
                while let Some((key, slot)) = org.sessions.iter().next() {
                    let idle = slot.last_used.load(Ordering::Relaxed) < cutoff
                        && Arc::strong_count(slot) == 1;
                    if !idle {
                        break;
                    }
                    let key = key.clone();
                    org.remove(&key);
                    closed += 1;
                }
                closed
            });
        }
        if closed > 0 {
            tracing::debug!(closed, open = slots.total, "closed idle MCP sessions");
        }
    }
}

/// Room held in an organization's share of the pool for a session that is
/// not pooled (a probe); released when dropped.
#[derive(Debug)]
pub struct Reservation {
    inner: Arc<PoolInner>,
    org: OrgId,
    stdio: bool,
    _lease: SessionLease,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.inner.slots().update(&self.org, |org| {
            org.probes = org.probes.saturating_sub(1);
            if self.stdio {
                org.stdio = org.stdio.saturating_sub(1);
            }
        });
    }
}

/// Live upstream sessions by key.
#[derive(Debug, Clone)]
pub struct SessionPool {
    inner: Arc<PoolInner>,
    shared: Arc<SharedSessions>,
}

impl SessionPool {
    /// An empty pool whose organizations' sessions are also counted in
    /// `shared`; a background task closes idle sessions while it lives.
    pub fn new(limits: PoolLimits, shared: Arc<SharedSessions>) -> Self {
        let inner = Arc::new(PoolInner {
            slots: Mutex::default(),
            limits,
            epoch: Instant::now(),
        });
        let weak: Weak<PoolInner> = Arc::downgrade(&inner);
        let period = (limits.idle_timeout / 4).max(Duration::from_millis(250));
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            loop {
                ticker.tick().await;
                match weak.upgrade() {
                    Some(inner) => inner.close_idle(),
                    None => break,
                }
            }
        });
        Self { inner, shared }
    }

    /// A lease of one more session of `org` across replicas; when the
    /// organization is at its limit there, one of its idle sessions here is
    /// closed to make room (its lease comes back at once), or the session
    /// is refused.
    async fn lease(&self, org: &OrgId, stdio: bool) -> Result<SessionLease, CallError> {
        match self.shared.lease(org, stdio).await {
            Err(LeaseRefused::AtLimit { stdio: kind, .. })
                if self
                    .inner
                    .slots()
                    .update(org, |sessions| sessions.close_one_idle(kind)) =>
            {
                self.shared.lease(org, stdio).await
            }
            leased => leased,
        }
        .map_err(|refused| refused.into_call_error(org, RETRY_AFTER))
    }

    /// Holds room for one unpooled session of `integration` (a probe),
    /// within the same limits as pooled ones.
    pub async fn reserve(&self, integration: &Integration) -> Result<Reservation, CallError> {
        let org = &integration.org_id;
        let stdio = integration.transport.runs_a_process();
        let lease = self.lease(org, stdio).await?;
        let limits = self.shared.limits_of(org, self.inner.limits);
        let mut slots = self.inner.slots();
        slots.admit(org, stdio, &limits)?;
        slots.update(org, |org| {
            org.probes += 1;
            if stdio {
                org.stdio += 1;
            }
        });
        Ok(Reservation {
            inner: self.inner.clone(),
            org: org.clone(),
            stdio,
            _lease: lease,
        })
    }

    async fn slot(&self, key: &SessionKey) -> Result<Arc<Slot>, CallError> {
        if let Some(slot) = self.inner.slots().pooled(key) {
            return Ok(slot);
        }
        let lease = self.lease(&key.org, key.stdio).await?;
        let limits = self.shared.limits_of(&key.org, self.inner.limits);
        let mut slots = self.inner.slots();
        // Another caller of the key may have opened it meanwhile; the lease
        // taken for nothing goes back as it drops.
        if let Some(slot) = slots.pooled(key) {
            return Ok(slot);
        }
        slots.admit(&key.org, key.stdio, &limits)?;
        let slot = Arc::new(Slot {
            _lease: Some(lease),
            ..Slot::default()
        });
        slots.update(&key.org, |org| org.insert(key.clone(), slot.clone()));
        Ok(slot)
    }

    /// The live session of `key`, connecting with `connect` when there is
    /// none (once, however many callers arrive together). A session found
    /// closed is replaced.
    pub async fn get<F, Fut>(
        &self,
        key: &SessionKey,
        connect: F,
    ) -> Result<(Arc<Slot>, Arc<Live>), CallError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Live, CallError>>,
    {
        for _ in 0..2 {
            let slot = self.slot(key).await?;
            slot.last_used.store(self.inner.now(), Ordering::Relaxed);
            let connected = slot
                .live
                .get_or_try_init(|| async {
                    let live = connect().await?;
                    Ok::<_, CallError>(Arc::new(live))
                })
                .await
                .cloned();
            let live = match connected {
                Ok(live) => live,
                Err(error) => {
                    // A failed connect holds no room in the organization's share.
                    self.discard(key, &slot);
                    return Err(error);
                }
            };
            // A session whose loop has ended (its server died, say) is not
            // cancelled, only unable to send: both mean it is gone.
            if !live.session.is_closed() && !live.session.peer().is_transport_closed() {
                return Ok((slot, live));
            }
            self.discard(key, &slot);
        }
        Err(CallError::Connect(
            "the MCP session closed while connecting".to_owned(),
        ))
    }

    /// Drops `slot` from the pool if it still holds `key` (a dead session);
    /// the next caller connects anew.
    pub fn discard(&self, key: &SessionKey, slot: &Arc<Slot>) {
        self.inner.slots().update(&key.org, |org| {
            if org
                .sessions
                .peek(key)
                .is_some_and(|current| Arc::ptr_eq(current, slot))
            {
                org.remove(key);
            }
        });
    }

    /// Closes every session of `integration`.
    pub fn forget(&self, integration: IntegrationId) {
        let mut slots = self.inner.slots();
        let keys: Vec<SessionKey> = slots
            .orgs
            .values()
            .flat_map(|org| org.sessions.iter().map(|(key, _)| key))
            .filter(|key| key.integration == integration)
            .cloned()
            .collect();
        for key in keys {
            slots.update(&key.org, |org| org.remove(&key));
        }
    }
}

#[cfg(test)]
mod tests;
