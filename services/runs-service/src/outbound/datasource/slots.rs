//! Slots for data-source work (queries and imports), fair between
//! organizations.
//!
//! The process runs at most `total` at once; one organization at most
//! `per_org`, fewer than `total`. An organization at its share is refused at
//! once (its own work is what it waits for), so it never queues in front of
//! the others; below its share it waits, first come first served, for a free
//! slot of the process.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::datasource::Busy;

/// The process's slots and what each organization holds.
#[derive(Debug)]
pub(super) struct Slots {
    total: Arc<Semaphore>,
    per_org: usize,
    held: Arc<Mutex<HashMap<String, usize>>>,
}

/// A slot, given back when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    _total: OwnedSemaphorePermit,
    _org: OrgShare,
}

/// One unit of an organization's share, given back when dropped.
#[derive(Debug)]
struct OrgShare {
    held: Arc<Mutex<HashMap<String, usize>>>,
    org: String,
}

impl Drop for OrgShare {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        if let Some(count) = held.get_mut(&self.org) {
            *count -= 1;
            if *count == 0 {
                // Entries exist only while held, so the map stays small.
                held.remove(&self.org);
            }
        }
    }
}

fn lock(held: &Mutex<HashMap<String, usize>>) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
    // Each update is one map operation, so a poisoned lock is consistent.
    held.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Slots {
    /// `total` slots, at most `per_org` for one organization (both at least 1).
    pub fn new(total: usize, per_org: usize) -> Self {
        let total = total.max(1);
        Self {
            total: Arc::new(Semaphore::new(total)),
            per_org: per_org.clamp(1, total),
            held: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A slot for `org`, waiting at most `wait` for one of the process.
    pub async fn acquire(&self, org: &str, wait: Duration) -> Result<Slot, Busy> {
        let share = {
            let mut held = lock(&self.held);
            let count = held.entry(org.to_owned()).or_default();
            if *count >= self.per_org {
                return Err(Busy::OrgBusy {
                    limit: self.per_org,
                });
            }
            *count += 1;
            OrgShare {
                held: Arc::clone(&self.held),
                org: org.to_owned(),
            }
        };
        let permit = tokio::time::timeout(wait, Arc::clone(&self.total).acquire_owned())
            .await
            .map_err(|_| Busy::Timeout(wait))?
            // The semaphore is never closed.
            .map_err(|_| Busy::Timeout(wait))?;
        Ok(Slot {
            _total: permit,
            _org: share,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_organization_gets_at_most_its_share_and_others_still_get_theirs() {
        let slots = Slots::new(3, 2);
        let wait = Duration::from_millis(50);
        let a1 = slots.acquire("a", wait).await.expect("a's first");
        let _a2 = slots.acquire("a", wait).await.expect("a's second");
        assert_eq!(
            slots.acquire("a", wait).await.err(),
            Some(Busy::OrgBusy { limit: 2 })
        );
        let _b1 = slots
            .acquire("b", wait)
            .await
            .expect("b gets the slot a cannot take");
        assert_eq!(
            slots.acquire("b", wait).await.err(),
            Some(Busy::Timeout(wait)),
            "the process is full"
        );
        drop(a1);
        assert!(slots.acquire("b", wait).await.is_ok());
        assert!(lock(&slots.held).get("c").is_none());
    }
}
