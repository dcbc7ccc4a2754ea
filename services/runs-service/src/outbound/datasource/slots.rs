//! Slots for data-source work (queries and imports), fair between
//! organizations.
//!
//! The process runs at most `total` at once; one organization at most
//! `per_org`, fewer than `total`. Work waits its turn rather than being
//! refused: first for a unit of its organization's share (so that an
//! organization's own work is what it waits behind, never another's), then,
//! first come first served, for a slot of the process, where each
//! organization has at most `per_org` in line. Both waits together end at
//! the caller's `wait`. An organization with `queued_per_org` already
//! waiting for its share is refused at once, so that a flood holds neither
//! memory nor tasks.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    sync::{OwnedSemaphorePermit, Semaphore},
    time::Instant,
};

use crate::domain::datasource::Busy;

/// The process's slots and each organization's share.
#[derive(Debug)]
pub(super) struct Slots {
    total: Arc<Semaphore>,
    per_org: usize,
    queued_per_org: usize,
    orgs: Arc<Mutex<HashMap<String, OrgEntry>>>,
}

/// An organization's share while anyone holds or waits for it.
#[derive(Debug)]
struct OrgEntry {
    share: Arc<Semaphore>,
    /// Work holding or waiting for a unit of the share.
    users: usize,
    /// Of those, the ones waiting.
    waiting: usize,
}

/// A slot, given back when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    _total: OwnedSemaphorePermit,
    _share: OwnedSemaphorePermit,
    _user: OrgUser,
}

/// One piece of work holding or waiting for its organization's share; the
/// entry goes when the last one does, so the map holds only organizations
/// at work.
#[derive(Debug)]
struct OrgUser {
    orgs: Arc<Mutex<HashMap<String, OrgEntry>>>,
    org: String,
}

impl Drop for OrgUser {
    fn drop(&mut self) {
        let mut orgs = lock(&self.orgs);
        if let Some(entry) = orgs.get_mut(&self.org) {
            entry.users -= 1;
            if entry.users == 0 {
                orgs.remove(&self.org);
            }
        }
    }
}

fn lock(
    orgs: &Mutex<HashMap<String, OrgEntry>>,
) -> std::sync::MutexGuard<'_, HashMap<String, OrgEntry>> {
    // Each update is a few field changes under the lock, so a poisoned lock
    // is consistent.
    orgs.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Slots {
    /// `total` slots, at most `per_org` for one organization (both at least
    /// 1), and at most `queued_per_org` of its work waiting for its share.
    pub fn new(total: usize, per_org: usize, queued_per_org: usize) -> Self {
        let total = total.max(1);
        Self {
            total: Arc::new(Semaphore::new(total)),
            per_org: per_org.clamp(1, total),
            queued_per_org,
            orgs: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A slot for `org`, waiting at most `wait` in all.
    pub async fn acquire(&self, org: &str, wait: Duration) -> Result<Slot, Busy> {
        let deadline = Instant::now() + wait;
        let (share, user) = self.join(org)?;
        let share = match share.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => self.wait_for_share(org, share, deadline).await?,
        };
        let total = tokio::time::timeout_at(deadline, Arc::clone(&self.total).acquire_owned())
            .await
            .map_err(|_| Busy::Timeout(wait))?
            // The semaphore is never closed.
            .map_err(|_| Busy::Timeout(wait))?;
        Ok(Slot {
            _total: total,
            _share: share,
            _user: user,
        })
    }

    /// Counts a new piece of work of `org`; refused when as many as
    /// `queued_per_org` already wait for its share.
    fn join(&self, org: &str) -> Result<(Arc<Semaphore>, OrgUser), Busy> {
        let mut orgs = lock(&self.orgs);
        let entry = orgs.entry(org.to_owned()).or_insert_with(|| OrgEntry {
            share: Arc::new(Semaphore::new(self.per_org)),
            users: 0,
            waiting: 0,
        });
        if entry.share.available_permits() == 0 && entry.waiting >= self.queued_per_org {
            if entry.users == 0 {
                orgs.remove(org);
            }
            return Err(Busy::OrgBusy {
                limit: self.per_org,
            });
        }
        entry.users += 1;
        let user = OrgUser {
            orgs: Arc::clone(&self.orgs),
            org: org.to_owned(),
        };
        Ok((Arc::clone(&entry.share), user))
    }

    /// Waits, counted as waiting (also when the caller gives up), for a
    /// unit of `org`'s share.
    async fn wait_for_share(
        &self,
        org: &str,
        share: Arc<Semaphore>,
        deadline: Instant,
    ) -> Result<OwnedSemaphorePermit, Busy> {
        let _waiting = Waiting::start(&self.orgs, org);
        match tokio::time::timeout_at(deadline, share.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // Its own work outlasted the wait; the semaphore is never
            // closed.
            _ => Err(Busy::OrgBusy {
                limit: self.per_org,
            }),
        }
    }
}

/// One piece of work waiting for its organization's share, counted until
/// it stops waiting for whatever reason.
struct Waiting<'a> {
    orgs: &'a Mutex<HashMap<String, OrgEntry>>,
    org: &'a str,
}

impl<'a> Waiting<'a> {
    fn start(orgs: &'a Mutex<HashMap<String, OrgEntry>>, org: &'a str) -> Self {
        if let Some(entry) = lock(orgs).get_mut(org) {
            entry.waiting += 1;
        }
        Self { orgs, org }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(entry) = lock(self.orgs).get_mut(self.org) {
            entry.waiting -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn work_past_its_share_waits_for_its_own_and_others_go_first() {
        let slots = Arc::new(Slots::new(3, 2, 8));
        let a1 = slots.acquire("a", LONG).await.expect("a's first");
        let _a2 = slots.acquire("a", LONG).await.expect("a's second");
        let third = tokio::spawn({
            let slots = Arc::clone(&slots);
            async move { slots.acquire("a", LONG).await }
        });
        tokio::task::yield_now().await;
        // b does not wait behind a's third.
        let b1 = tokio::time::timeout(Duration::from_secs(5), slots.acquire("b", LONG))
            .await
            .expect("at once")
            .expect("b's first");
        assert!(!third.is_finished(), "a's third waits for a's own work");
        drop(b1);
        drop(a1);
        let a3 = third.await.expect("joined").expect("a's third, in turn");
        drop(a3);
        drop(_a2);
        assert!(lock(&slots.orgs).is_empty(), "no organization at work");
    }

    #[tokio::test]
    async fn an_organization_with_its_queue_full_is_refused_at_once() {
        let slots = Arc::new(Slots::new(2, 1, 2));
        let _held = slots.acquire("a", LONG).await.expect("a's share");
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let slots = Arc::clone(&slots);
                tokio::spawn(async move { slots.acquire("a", LONG).await })
            })
            .collect();
        while lock(&slots.orgs).get("a").map(|e| e.waiting) != Some(2) {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            slots.acquire("a", LONG).await.err(),
            Some(Busy::OrgBusy { limit: 1 }),
            "the third in line"
        );
        // A waiter that gives up leaves the line.
        waiters[0].abort();
        while lock(&slots.orgs).get("a").map(|e| e.waiting) != Some(1) {
            tokio::task::yield_now().await;
        }
        let again = tokio::spawn({
            let slots = Arc::clone(&slots);
            async move { slots.acquire("a", LONG).await }
        });
        while lock(&slots.orgs).get("a").map(|e| e.waiting) != Some(2) {
            tokio::task::yield_now().await;
        }
        again.abort();
        waiters[1].abort();
    }

    #[tokio::test]
    async fn the_wait_ends_at_the_deadline() {
        let slots = Slots::new(2, 1, 8);
        let wait = Duration::from_millis(50);
        let _a = slots.acquire("a", wait).await.expect("a's share");
        assert_eq!(
            slots.acquire("a", wait).await.err(),
            Some(Busy::OrgBusy { limit: 1 })
        );
        let _b = slots.acquire("b", wait).await.expect("b's share");
        assert_eq!(
            slots.acquire("c", wait).await.err(),
            Some(Busy::Timeout(wait)),
            "the process is full"
        );
        assert_eq!(lock(&slots.orgs).len(), 2, "c left no entry");
    }
}
