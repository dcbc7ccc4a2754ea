//! The pool of live upstream MCP sessions.
//!
//! A session is bound to an integration's configuration (its `updated_at`
//! version, so new credentials never reuse an old session) and to a scope
//! (one conversation), so stateful servers never see state cross between
//! conversations or organizations. Concurrent callers of one key share one
//! connect; idle sessions are closed; a cap bounds the pool by closing the
//! least recently used session.

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::{
    ClientHandler, RoleClient,
    model::ClientConfig,
    service::{NotificationContext, RunningService},
};
use tokio::sync::OnceCell;

use crate::domain::{
    integration::{Integration, IntegrationId},
    ports::{Discovery, SessionScope},
};

/// Receives the server's notifications for one session: a `list_changed`
/// drops the integration's cached discovery.
#[derive(Debug, Clone)]
pub struct SessionHandler {
    config: ClientConfig,
    integration: IntegrationId,
    cache: DiscoveryCache,
}

impl SessionHandler {
    /// A handler announcing `config`, invalidating `integration` in `cache`.
    pub fn new(config: ClientConfig, integration: IntegrationId, cache: DiscoveryCache) -> Self {
        Self {
            config,
            integration,
            cache,
        }
    }

    fn list_changed(&self, what: &'static str) {
        tracing::debug!(integration_id = %self.integration, what, "server list changed");
        self.cache.invalidate(self.integration);
    }
}

impl ClientHandler for SessionHandler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed("tools");
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed("resources");
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed("prompts");
    }
}

/// A live MCP client session.
pub type McpSession = RunningService<RoleClient, SessionHandler>;

/// A stdio server's process group, killed with the session.
pub struct StdioChild(pub Box<dyn process_wrap::tokio::ChildWrapper>);

impl std::fmt::Debug for StdioChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StdioChild").field(&self.0.id()).finish()
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        // The group leader's id is the group id: this kills the server and
        // anything it started.
        if let Err(error) = self.0.start_kill() {
            tracing::debug!(error = %error, "stdio server already gone");
        }
    }
}

/// An open session and what must live as long as it.
#[derive(Debug)]
pub struct Live {
    /// The session.
    pub session: McpSession,
    /// The stdio process, when the transport is stdio.
    pub child: Option<StdioChild>,
}

/// A cached discovery: the integration version it belongs to, when it was
/// made, and what was found.
type CacheEntry = (i64, Instant, Arc<Discovery>);

/// Cached discovery results, by integration.
#[derive(Debug, Clone)]
pub struct DiscoveryCache {
    entries: Arc<Mutex<HashMap<IntegrationId, CacheEntry>>>,
    ttl: Duration,
}

impl DiscoveryCache {
    /// A cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            entries: Arc::default(),
            ttl,
        }
    }

    /// The fresh entry of `integration` at its current version.
    pub fn get(&self, integration: &Integration) -> Option<Arc<Discovery>> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(&integration.id)
            .filter(|(version, at, _)| {
                *version == integration.updated_at && at.elapsed() < self.ttl
            })
            .map(|(_, _, discovery)| discovery.clone())
    }

    /// Stores a discovery of `integration`.
    pub fn put(&self, integration: &Integration, discovery: Arc<Discovery>) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                integration.id,
                (integration.updated_at, Instant::now(), discovery),
            );
        }
    }

    /// Drops the entry of `integration`.
    pub fn invalidate(&self, integration: IntegrationId) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(&integration);
        }
    }
}

/// What a session is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    integration: IntegrationId,
    version: i64,
    scope: SessionScope,
}

impl SessionKey {
    /// The key of `scope`'s session with `integration` as configured now.
    pub fn new(integration: &Integration, scope: &SessionScope) -> Self {
        Self {
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
}

/// Pool limits.
#[derive(Debug, Clone, Copy)]
pub struct PoolLimits {
    /// Most sessions kept open.
    pub max_sessions: usize,
    /// Sessions unused this long are closed.
    pub idle_timeout: Duration,
}

#[derive(Debug)]
struct PoolInner {
    slots: Mutex<HashMap<SessionKey, Arc<Slot>>>,
    limits: PoolLimits,
    epoch: Instant,
    opened: AtomicU64,
}

/// Live upstream sessions by key.
#[derive(Debug, Clone)]
pub struct SessionPool {
    inner: Arc<PoolInner>,
}

impl PoolInner {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Arc<Slot>>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn close_idle(&self) {
        let cutoff = self.now().saturating_sub(
            u64::try_from(self.limits.idle_timeout.as_millis()).unwrap_or(u64::MAX),
        );
        let mut slots = self.slots();
        let before = slots.len();
        slots.retain(|_, slot| slot.last_used.load(Ordering::Relaxed) >= cutoff);
        let closed = before - slots.len();
        if closed > 0 {
            tracing::debug!(closed, open = slots.len(), "closed idle MCP sessions");
        }
    }
}

impl SessionPool {
    /// An empty pool; a background task closes idle sessions while it lives.
    pub fn new(limits: PoolLimits) -> Self {
        let inner = Arc::new(PoolInner {
            slots: Mutex::default(),
            limits,
            epoch: Instant::now(),
            opened: AtomicU64::new(0),
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
        Self { inner }
    }

    /// Sessions opened since the pool started.
    pub fn opened(&self) -> u64 {
        self.inner.opened.load(Ordering::Relaxed)
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.inner.slots().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn slot(&self, key: &SessionKey) -> Arc<Slot> {
        let mut slots = self.inner.slots();
        if let Some(slot) = slots.get(key) {
            return slot.clone();
        }
        if slots.len() >= self.inner.limits.max_sessions {
            let oldest = slots
                .iter()
                .min_by_key(|(_, slot)| slot.last_used.load(Ordering::Relaxed))
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                slots.remove(&oldest);
                tracing::debug!("session pool full: closed the least recently used session");
            }
        }
        let slot = Arc::new(Slot::default());
        slots.insert(key.clone(), slot.clone());
        slot
    }

    /// The live session of `key`, connecting with `connect` when there is
    /// none (once, however many callers arrive together). A session found
    /// closed is replaced.
    pub async fn get<F, Fut>(
        &self,
        key: &SessionKey,
        connect: F,
    ) -> Result<(Arc<Slot>, Arc<Live>), String>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Live, String>>,
    {
        for _ in 0..2 {
            let slot = self.slot(key);
            slot.last_used.store(self.inner.now(), Ordering::Relaxed);
            let live = slot
                .live
                .get_or_try_init(|| async {
                    let live = connect().await?;
                    self.inner.opened.fetch_add(1, Ordering::Relaxed);
                    Ok::<_, String>(Arc::new(live))
                })
                .await?
                .clone();
            if !live.session.is_closed() {
                return Ok((slot, live));
            }
            self.discard(key, &slot);
        }
        Err("the MCP session closed while connecting".to_owned())
    }

    /// Drops `slot` from the pool if it still holds `key` (a dead session);
    /// the next caller connects anew.
    pub fn discard(&self, key: &SessionKey, slot: &Arc<Slot>) {
        let mut slots = self.inner.slots();
        if slots
            .get(key)
            .is_some_and(|current| Arc::ptr_eq(current, slot))
        {
            slots.remove(key);
        }
    }

    /// Closes every session of `integration`.
    pub fn forget(&self, integration: IntegrationId) {
        self.inner
            .slots()
            .retain(|key, _| key.integration != integration);
    }
}
