//! One replica's calls in flight per organization, admitted from the grant
//! it holds in the shared [`SlotGrants`] store.
//!
//! A call is admitted without a round trip while the replica's grant of its
//! organization has room; only a call that finds it full waits for the
//! store, and is refused when the store grants nothing more. The heartbeat
//! renews the grants and gives back the slots not used since the last beat.
//!
//! A call that finds its organization at its limit waits its turn, in the
//! order the organization's calls came, until a slot comes free or the wait
//! the caller can afford is over; each organization has its own line, so
//! one organization's waiting calls never delay another's. As many calls
//! may wait as the organization may run; more are refused at once.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};

use super::grants::{Ask, SlotGrants};

/// Why a call was not admitted.
#[derive(Debug)]
pub enum NotAdmitted {
    /// The organization's calls in flight, on every replica, are at its limit.
    AtLimit,
    /// The store could not be asked.
    Store(anyhow::Error),
}

#[derive(Debug, Default)]
struct OrgSlots {
    /// Slots of this replica's grant.
    granted: usize,
    in_use: usize,
    /// The most calls in flight since the last heartbeat.
    peak: usize,
    /// The grant holds until then (from before it was asked for, so never
    /// past the store's own expiry); none when it lapsed or never was.
    valid_until: Option<Instant>,
    /// Held while the store is asked about this organization, so that one
    /// replica's requests of one organization never cross.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// The tickets of the calls of this organization waiting for a slot,
    /// first come first.
    line: VecDeque<u64>,
    /// The ticket of the next call to wait.
    next_ticket: u64,
    /// Wakes the waiting calls when a slot comes free or the line moves.
    freed: Arc<Notify>,
    /// When a call last asked the store for this organization.
    last_asked: Option<Instant>,
}

impl OrgSlots {
    /// Takes a slot of the grant, when it has one.
    fn take(&mut self, now: Instant) -> bool {
        let live = self.valid_until.is_some_and(|until| now < until);
        if !live || self.in_use >= self.granted {
            return false;
        }
        self.in_use += 1;
        self.peak = self.peak.max(self.in_use);
        true
    }
}

/// How often a waiting call asks the store again: other replicas' calls
/// end without waking this replica's.
const ASK_AGAIN_EVERY: Duration = Duration::from_millis(100);

/// How grants are asked for and kept.
#[derive(Debug, Clone, Copy)]
pub struct GrantSettings {
    /// Slots asked for at once, far from the limit.
    pub batch: usize,
    /// How long a grant holds without renewal.
    pub ttl: Duration,
    /// Tokens of calls per second taken at once, far from an empty bucket.
    pub token_batch: u32,
}

/// One replica's calls in flight, per organization.
#[derive(Debug)]
pub struct Slots {
    replica: String,
    store: Arc<dyn SlotGrants>,
    settings: GrantSettings,
    orgs: Mutex<HashMap<String, OrgSlots>>,
}

impl Slots {
    /// The calls of replica `replica`, admitted from grants of `store`.
    pub fn new(replica: String, store: Arc<dyn SlotGrants>, settings: GrantSettings) -> Self {
        Self {
            replica,
            store,
            settings,
            orgs: Mutex::new(HashMap::new()),
        }
    }

    fn locked(&self) -> MutexGuard<'_, HashMap<String, OrgSlots>> {
        // Plain counts that every holder leaves consistent: a panic
        // elsewhere while holding them leaves nothing to repair.
        self.orgs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a call of `org`, whose limit is `limit`, waiting for a slot
    /// until `until` at most; the caller gives the slot back with
    /// [`Self::end`].
    pub async fn admit(&self, org: &str, limit: usize, until: Instant) -> Result<(), NotAdmitted> {
        match self.try_admit(org, limit, None).await {
            Err(NotAdmitted::AtLimit) => {}
            done => return done,
        }
        let Some(waiting) = self.wait_in_line(org, limit) else {
            return Err(NotAdmitted::AtLimit);
        };
        loop {
            // Listening before looking, so that a slot freed in between
            // still wakes this call.
            let freed = waiting.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            match self.try_admit(org, limit, Some(waiting.ticket)).await {
                Err(NotAdmitted::AtLimit) => {}
                done => return done,
            }
            let now = Instant::now();
            if now >= until {
                return Err(NotAdmitted::AtLimit);
            }
            let _ = tokio::time::timeout_at(until.min(now + ASK_AGAIN_EVERY), freed).await;
        }
    }

    /// Takes a slot of this replica's grant, or of a grant grown in the
    /// store, for a call that has just come (no `ticket`) while nobody
    /// waits, or for the call first in line. The call first in line asks
    /// the store at most once per [`ASK_AGAIN_EVERY`].
    async fn try_admit(
        &self,
        org: &str,
        limit: usize,
        ticket: Option<u64>,
    ) -> Result<(), NotAdmitted> {
        let asking = {
            let mut orgs = self.locked();
            let slots = orgs.entry(org.to_owned()).or_default();
            if slots.line.front().copied() != ticket {
                // Others came first.
                return Err(NotAdmitted::AtLimit);
            }
            if slots.take(Instant::now()) {
                return Ok(());
            }
            slots.asking.clone()
        };
        let _asking = asking.lock().await;
        // Another call may have grown the grant while this one waited.
        let ask = {
            let mut orgs = self.locked();
            let slots = orgs.entry(org.to_owned()).or_default();
            let now = Instant::now();
            if slots.take(now) {
                return Ok(());
            }
            if ticket.is_some()
                && slots
                    .last_asked
                    .is_some_and(|at| now < at + ASK_AGAIN_EVERY)
            {
                return Err(NotAdmitted::AtLimit);
            }
            slots.last_asked = Some(now);
            let live = slots.valid_until.is_some_and(|until| now < until);
            Ask {
                keep: if live { slots.granted } else { slots.in_use },
                want: self.settings.batch,
                limit,
            }
        };
        let asked_at = Instant::now();
        let granted = self
            .store
            .acquire(&self.replica, org, ask)
            .await
            .map_err(NotAdmitted::Store)?;
        let mut orgs = self.locked();
        let slots = orgs.entry(org.to_owned()).or_default();
        slots.granted = granted;
        slots.valid_until = Some(asked_at + self.settings.ttl);
        if slots.take(Instant::now()) {
            Ok(())
        } else {
            Err(NotAdmitted::AtLimit)
        }
    }

    /// Puts a call of `org` at the end of its organization's line, unless
    /// as many calls as `limit` wait already.
    fn wait_in_line(&self, org: &str, limit: usize) -> Option<Waiting<'_>> {
        let mut orgs = self.locked();
        let slots = orgs.entry(org.to_owned()).or_default();
        if slots.line.len() >= limit {
            return None;
        }
        let ticket = slots.next_ticket;
        slots.next_ticket = slots.next_ticket.wrapping_add(1);
        slots.line.push_back(ticket);
        Some(Waiting {
            slots: self,
            org: org.to_owned(),
            ticket,
            freed: slots.freed.clone(),
        })
    }

    /// Gives back the slot of a call of `org` that ended.
    pub fn end(&self, org: &str) {
        if let Some(slots) = self.locked().get_mut(org) {
            slots.in_use = slots.in_use.saturating_sub(1);
            if !slots.line.is_empty() {
                slots.freed.notify_waiters();
            }
        }
    }

    /// Renews the grants, then gives back the slots no call used since the
    /// last beat and forgets organizations with neither calls nor grant.
    pub async fn beat(&self) {
        let asked_at = Instant::now();
        match self.store.renew(&self.replica).await {
            Ok(renewed) => {
                let until = asked_at + self.settings.ttl;
                let mut orgs = self.locked();
                for org in renewed {
                    if let Some(slots) = orgs.get_mut(&org) {
                        slots.valid_until = Some(slots.valid_until.map_or(until, |u| u.max(until)));
                    }
                }
            }
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "grants of calls in flight not renewed")
            }
        }
        for (org, target, asking) in self.to_shrink() {
            // A call asking for this organization now settles its grant.
            let Ok(_asking) = asking.try_lock() else {
                continue;
            };
            match self.store.shrink(&self.replica, &org, target).await {
                Ok(true) => {}
                Ok(false) => {
                    if let Some(slots) = self.locked().get_mut(&org) {
                        slots.valid_until = None;
                    }
                }
                Err(error) => {
                    tracing::warn!(org = %org, error = %format!("{error:#}"), "grant of calls in flight not shrunk")
                }
            }
        }
        self.locked().retain(|_, slots| {
            slots.in_use > 0
                || slots.granted > 0
                || !slots.line.is_empty()
                || Arc::strong_count(&slots.asking) > 1
        });
    }

    /// Lowers each grant to the most calls in flight since the last beat
    /// (at once, so that no call takes a slot being given back) and returns
    /// the organizations whose grant shrank, with its new size.
    fn to_shrink(&self) -> Vec<(String, usize, Arc<tokio::sync::Mutex<()>>)> {
        let mut orgs = self.locked();
        let mut shrunk = Vec::new();
        for (org, slots) in orgs.iter_mut() {
            let target = slots.in_use.max(slots.peak);
            slots.peak = slots.in_use;
            if target < slots.granted {
                slots.granted = target;
                shrunk.push((org.clone(), target, slots.asking.clone()));
            }
        }
        shrunk
    }

    /// Gives up every grant (the process stops).
    pub async fn release(&self) {
        if let Err(error) = self.store.release(&self.replica).await {
            tracing::warn!(error = %format!("{error:#}"), "grants of calls in flight not given up");
        }
    }
}

/// A call in its organization's line, until dropped (admitted, refused or
/// given up by its caller).
struct Waiting<'a> {
    slots: &'a Slots,
    org: String,
    ticket: u64,
    freed: Arc<Notify>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.locked().get_mut(&self.org) {
            slots.line.retain(|&ticket| ticket != self.ticket);
            // The next in line may take a slot this call leaves free.
            if !slots.line.is_empty() {
                slots.freed.notify_waiters();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::org_limits::grants::MemorySlotGrants;

    fn settings(batch: usize, ttl: Duration) -> GrantSettings {
        GrantSettings {
            batch,
            ttl,
            token_batch: 1,
        }
    }

    fn one_replica(batch: usize) -> Arc<Slots> {
        let ttl = Duration::from_secs(10);
        let store: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        Arc::new(Slots::new("a".into(), store, settings(batch, ttl)))
    }

    /// Starts a call of `org` that waits up to `wait`, and says when it
    /// was admitted or refused.
    fn call(
        slots: &Arc<Slots>,
        limit: usize,
        wait: Duration,
    ) -> tokio::task::JoinHandle<Result<(), NotAdmitted>> {
        let slots = slots.clone();
        tokio::spawn(async move { slots.admit("org", limit, Instant::now() + wait).await })
    }

    #[tokio::test]
    async fn a_call_at_the_limit_waits_its_turn_and_gets_the_slot_that_ends() {
        let slots = one_replica(8);
        for _ in 0..2 {
            slots
                .admit("org", 2, Instant::now())
                .await
                .expect("admitted");
        }
        let first = call(&slots, 2, Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let second = call(&slots, 2, Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!first.is_finished() && !second.is_finished(), "both wait");
        // A third would make the line longer than the limit.
        assert!(matches!(
            slots
                .admit("org", 2, Instant::now() + Duration::from_secs(30))
                .await,
            Err(NotAdmitted::AtLimit)
        ));

        slots.end("org");
        first
            .await
            .expect("joined")
            .expect("the first in line is admitted");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!second.is_finished(), "one slot came free, not two");
        slots.end("org");
        second.await.expect("joined").expect("then the second");
    }

    #[tokio::test]
    async fn a_waiting_call_is_refused_when_its_wait_is_over_and_leaves_the_line() {
        let slots = one_replica(8);
        slots
            .admit("org", 1, Instant::now())
            .await
            .expect("admitted");
        let started = Instant::now();
        let waited = call(&slots, 1, Duration::from_millis(300));
        assert!(matches!(
            waited.await.expect("joined"),
            Err(NotAdmitted::AtLimit)
        ));
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(
            slots.locked()["org"].line.is_empty(),
            "the line is empty again"
        );
        // The slot it never got goes to the next caller once it ends.
        slots.end("org");
        slots
            .admit("org", 1, Instant::now())
            .await
            .expect("admitted");
    }

    #[tokio::test]
    async fn a_call_waiting_on_one_replica_gets_a_slot_another_replica_gave_back() {
        let ttl = Duration::from_secs(10);
        let store: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let settings = settings(1, ttl);
        let a = Slots::new("a".into(), store.clone(), settings);
        let b = Arc::new(Slots::new("b".into(), store, settings));
        a.admit("org", 1, Instant::now()).await.expect("admitted");
        let waiting = call(&b, 1, Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!waiting.is_finished(), "a holds the only slot");
        a.end("org");
        // Two beats: the first keeps the peak since the last one.
        a.beat().await;
        a.beat().await;
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("b asks the store again while it waits")
            .expect("joined")
            .expect("admitted on b");
    }

    #[tokio::test]
    async fn two_replicas_share_a_limit_and_idle_slots_return_at_the_heartbeat() {
        let ttl = Duration::from_secs(10);
        let store: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let settings = settings(4, ttl);
        let a = Slots::new("a".into(), store.clone(), settings);
        let b = Slots::new("b".into(), store, settings);
        for _ in 0..3 {
            a.admit("org", 20, Instant::now()).await.expect("admitted");
        }
        let mut admitted = 0;
        while b.admit("org", 20, Instant::now()).await.is_ok() {
            admitted += 1;
        }
        // a holds a batch of 4, one of them idle; b has the rest.
        assert_eq!(admitted, 16);
        a.admit("org", 20, Instant::now())
            .await
            .expect("from a's own grant");
        assert!(matches!(
            a.admit("org", 20, Instant::now()).await,
            Err(NotAdmitted::AtLimit)
        ));

        // a's calls end: two beats give its slots back, and b takes them.
        for _ in 0..4 {
            a.end("org");
        }
        a.beat().await;
        a.beat().await;
        assert!(a.locked().is_empty(), "an idle organization is forgotten");
        for _ in 0..4 {
            b.admit("org", 20, Instant::now()).await.expect("a's slots");
        }
        assert!(matches!(
            b.admit("org", 20, Instant::now()).await,
            Err(NotAdmitted::AtLimit)
        ));
    }

    #[tokio::test]
    async fn a_lapsed_grant_is_asked_for_again_keeping_the_calls_in_flight() {
        let ttl = Duration::from_millis(200);
        let store: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let settings = settings(1, ttl);
        let (a, b) = (
            Slots::new("a".into(), store.clone(), settings),
            Slots::new("b".into(), store, settings),
        );
        a.admit("org", 2, Instant::now()).await.expect("admitted");
        // No heartbeat: a's grant lapses, b may take the slot a left free
        // but not the one a's call still holds.
        tokio::time::sleep(ttl * 2).await;
        b.admit("org", 2, Instant::now())
            .await
            .expect("the free slot");
        assert!(matches!(
            a.admit("org", 2, Instant::now()).await,
            Err(NotAdmitted::AtLimit)
        ));
        assert!(matches!(
            b.admit("org", 2, Instant::now()).await,
            Err(NotAdmitted::AtLimit)
        ));
    }
}
