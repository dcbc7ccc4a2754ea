//! Where the replicas of a service hold their grants of calls in flight per
//! organization, so that all of them together keep to its limit.
//!
//! A replica admits calls from its own grant without asking anyone; only
//! when the grant is used up does it ask the store for more, and the store
//! grants no more than the limit leaves beside the live grants of the other
//! replicas. A grant lives for a time-to-live and is renewed by the
//! replica's heartbeat, so a replica that stopped gives its slots back when
//! its grant expires.

use std::{collections::HashMap, fmt, sync::Mutex, time::Duration};

use futures::future::BoxFuture;
use tokio::time::Instant;

/// What a replica asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// Slots the replica keeps: its live grant, or the calls it still has
    /// in flight when its grant lapsed.
    pub keep: usize,
    /// Slots more it would like (its batch).
    pub want: usize,
    /// The organization's limit.
    pub limit: usize,
}

/// The slots granted to `ask`, kept ones included, when the other replicas'
/// live grants add up to `others`.
///
/// Far from the limit a whole batch is granted, so that the next calls are
/// admitted without asking; near it one slot at a time, so that no replica
/// holds idle slots another one needs.
pub fn grant(ask: Ask, others: usize) -> usize {
    let free = ask.limit.saturating_sub(others).saturating_sub(ask.keep);
    let more = if free >= ask.want.saturating_mul(2) {
        ask.want
    } else {
        free.min(1)
    };
    ask.keep + more
}

/// The store of grants: PostgreSQL when the replicas share one, memory when
/// the process is the only replica.
pub trait SlotGrants: Send + Sync + fmt::Debug + 'static {
    /// Sets `replica`'s grant of `org` to what [`grant`] gives `ask`, renewed
    /// for the time-to-live; returns it.
    fn acquire<'a>(
        &'a self,
        replica: &'a str,
        org: &'a str,
        ask: Ask,
    ) -> BoxFuture<'a, anyhow::Result<usize>>;

    /// Shrinks `replica`'s grant of `org` to `slots` (0: gives it up) and
    /// renews it; false when the grant had expired and is gone.
    fn shrink<'a>(
        &'a self,
        replica: &'a str,
        org: &'a str,
        slots: usize,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;

    /// Renews every live grant of `replica`; returns their organizations.
    fn renew<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<String>>>;

    /// Gives up every grant of `replica` (it stops).
    fn release<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, anyhow::Result<()>>;
}

/// Per organization, each replica's grant and when it expires.
type GrantMap = HashMap<String, HashMap<String, (usize, Instant)>>;

/// Grants in the process's memory: for one replica (SQLite), and for tests
/// of several replicas in one process.
#[derive(Debug)]
pub struct MemorySlotGrants {
    ttl: Duration,
    /// Per organization, each replica's grant and when it expires.
    grants: Mutex<GrantMap>,
}

impl MemorySlotGrants {
    /// Grants that expire `ttl` after they were last renewed.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            grants: Mutex::new(HashMap::new()),
        }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, GrantMap> {
        // Every holder leaves the map whole, so a panic elsewhere while
        // holding it leaves nothing to repair.
        self.grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SlotGrants for MemorySlotGrants {
    fn acquire<'a>(
        &'a self,
        replica: &'a str,
        org: &'a str,
        ask: Ask,
    ) -> BoxFuture<'a, anyhow::Result<usize>> {
        let now = Instant::now();
        let mut grants = self.locked();
        let of_org = grants.entry(org.to_owned()).or_default();
        of_org.retain(|_, (_, expires)| *expires >= now);
        let others = of_org
            .iter()
            .filter(|(r, _)| r.as_str() != replica)
            .map(|(_, (slots, _))| slots)
            .sum();
        let granted = grant(ask, others);
        if granted == 0 {
            of_org.remove(replica);
        } else {
            of_org.insert(replica.to_owned(), (granted, now + self.ttl));
        }
        if of_org.is_empty() {
            grants.remove(org);
        }
        Box::pin(std::future::ready(Ok(granted)))
    }

    fn shrink<'a>(
        &'a self,
        replica: &'a str,
        org: &'a str,
        slots: usize,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        let now = Instant::now();
        let mut grants = self.locked();
        let Some(of_org) = grants.get_mut(org) else {
            return Box::pin(std::future::ready(Ok(false)));
        };
        let live = of_org
            .get(replica)
            .is_some_and(|(_, expires)| *expires >= now);
        if !live || slots == 0 {
            of_org.remove(replica);
        } else {
            of_org.insert(replica.to_owned(), (slots, now + self.ttl));
        }
        if of_org.is_empty() {
            grants.remove(org);
        }
        Box::pin(std::future::ready(Ok(live)))
    }

    fn renew<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<String>>> {
        let now = Instant::now();
        let mut renewed = Vec::new();
        for (org, of_org) in self.locked().iter_mut() {
            if let Some((_, expires)) = of_org.get_mut(replica)
                && *expires >= now
            {
                *expires = now + self.ttl;
                renewed.push(org.clone());
            }
        }
        Box::pin(std::future::ready(Ok(renewed)))
    }

    fn release<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        let mut grants = self.locked();
        for of_org in grants.values_mut() {
            of_org.remove(replica);
        }
        grants.retain(|_, of_org| !of_org.is_empty());
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_granted_far_from_the_limit_and_single_slots_near_it() {
        let ask = |keep, want, limit| Ask { keep, want, limit };
        assert_eq!(grant(ask(0, 8, 256), 0), 8);
        assert_eq!(grant(ask(8, 8, 256), 100), 16);
        // 10 - 4 - 0 = 6 free: fewer than two batches.
        assert_eq!(grant(ask(0, 4, 10), 4), 1);
        assert_eq!(grant(ask(5, 4, 10), 5), 5);
        // Kept slots are kept, even past what the others left.
        assert_eq!(grant(ask(3, 4, 10), 9), 3);
        assert_eq!(grant(ask(0, 1, 1), 0), 1);
    }
}
