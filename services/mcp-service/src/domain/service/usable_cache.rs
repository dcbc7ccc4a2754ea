//! The integrations a process recently read for calls.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::domain::integration::{Integration, IntegrationId, OrgId};

/// Integrations recently read for calls, so that a conversation's tool calls
/// do not each read and unseal the integration. Changes made through this
/// process drop entries at once; other replicas' changes are seen within the
/// time to live.
#[derive(Debug, Default)]
pub(super) struct UsableCache {
    ttl: Duration,
    entries: Mutex<HashMap<(String, IntegrationId), (Instant, Integration)>>,
}

impl UsableCache {
    /// A cache keeping entries for `ttl` (zero keeps none).
    pub(super) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::default(),
        }
    }

    pub(super) fn get(&self, org: &OrgId, id: IntegrationId) -> Option<Integration> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(&(org.0.clone(), id))
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, integration)| integration.clone())
    }

    pub(super) fn put(&self, integration: &Integration) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            // Bounded: stale entries go first, then everything if still large.
            if entries.len() >= 10_000 {
                entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
                if entries.len() >= 10_000 {
                    entries.clear();
                }
            }
            entries.insert(
                (integration.org_id.0.clone(), integration.id),
                (Instant::now(), integration.clone()),
            );
        }
    }

    pub(super) fn forget(&self, id: IntegrationId) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(_, cached), _| *cached != id);
        }
    }
}
