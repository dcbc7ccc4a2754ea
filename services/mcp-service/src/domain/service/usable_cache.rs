//! The integrations a process recently read for calls.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::domain::integration::{Integration, IntegrationId, OrgId, Slug};

/// Most entries kept; past it stale entries go first, then everything.
const MAX_ENTRIES: usize = 10_000;

/// Integrations recently read for calls, so that a conversation's tool calls
/// do not each read and unseal the integration, nor each request of the MCP
/// endpoint look its path's slug up. Changes made through this process drop
/// entries at once; other replicas' changes are seen within the time to
/// live.
#[derive(Debug, Default)]
pub(super) struct UsableCache {
    ttl: Duration,
    entries: Mutex<HashMap<(String, IntegrationId), (Instant, Integration)>>,
    /// Which integration a slug of an organization named when last read.
    slugs: Mutex<HashMap<(String, String), (Instant, IntegrationId)>>,
}

impl UsableCache {
    /// A cache keeping entries for `ttl` (zero keeps none).
    pub(super) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::default(),
            slugs: Mutex::default(),
        }
    }

    pub(super) fn get(&self, org: &OrgId, id: IntegrationId) -> Option<Integration> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(&(org.0.clone(), id))
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, integration)| integration.clone())
    }

    /// The integration `slug` names in `org`, when both are cached.
    pub(super) fn by_slug(&self, org: &OrgId, slug: &Slug) -> Option<Integration> {
        let id = {
            let slugs = self.slugs.lock().ok()?;
            slugs
                .get(&(org.0.clone(), slug.as_str().to_owned()))
                .filter(|(at, _)| at.elapsed() < self.ttl)
                .map(|(_, id)| *id)?
        };
        self.get(org, id).filter(|found| found.slug == *slug)
    }

    pub(super) fn put(&self, integration: &Integration) {
        if self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        if let Ok(mut entries) = self.entries.lock() {
            make_room(&mut entries, self.ttl);
            entries.insert(
                (integration.org_id.0.clone(), integration.id),
                (now, integration.clone()),
            );
        }
        if let Ok(mut slugs) = self.slugs.lock() {
            make_room(&mut slugs, self.ttl);
            slugs.insert(
                (
                    integration.org_id.0.clone(),
                    integration.slug.as_str().to_owned(),
                ),
                (now, integration.id),
            );
        }
    }

    pub(super) fn forget(&self, id: IntegrationId) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(_, cached), _| *cached != id);
        }
        if let Ok(mut slugs) = self.slugs.lock() {
            slugs.retain(|_, (_, cached)| *cached != id);
        }
    }
}

/// Room for one more entry in `map`: stale entries go first, then
/// everything if it is still at the bound.
fn make_room<K, V>(map: &mut HashMap<K, (Instant, V)>, ttl: Duration) {
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, (at, _)| at.elapsed() < ttl);
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
    }
}
