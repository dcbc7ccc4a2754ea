//! One replica's calls in flight per organization, admitted from the grant
//! it holds in the shared [`SlotGrants`] store.
//!
//! A call is admitted without a round trip while the replica's grant of its
//! organization has room; only a call that finds it full waits for the
//! store, and is refused when the store grants nothing more. The heartbeat
//! renews the grants and gives back the slots not used since the last beat.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

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

/// How grants are asked for and kept.
#[derive(Debug, Clone, Copy)]
pub struct GrantSettings {
    /// Slots asked for at once, far from the limit.
    pub batch: usize,
    /// How long a grant holds without renewal.
    pub ttl: Duration,
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

    /// Admits a call of `org`, whose limit is `limit`; the caller gives the
    /// slot back with [`Self::end`].
    pub async fn admit(&self, org: &str, limit: usize) -> Result<(), NotAdmitted> {
        let asking = {
            let mut orgs = self.locked();
            let slots = orgs.entry(org.to_owned()).or_default();
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
            if slots.take(Instant::now()) {
                return Ok(());
            }
            let live = slots
                .valid_until
                .is_some_and(|until| Instant::now() < until);
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

    /// Gives back the slot of a call of `org` that ended.
    pub fn end(&self, org: &str) {
        if let Some(slots) = self.locked().get_mut(org) {
            slots.in_use = slots.in_use.saturating_sub(1);
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
            slots.in_use > 0 || slots.granted > 0 || Arc::strong_count(&slots.asking) > 1
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::org_limits::grants::MemorySlotGrants;

    #[tokio::test]
    async fn two_replicas_share_a_limit_and_idle_slots_return_at_the_heartbeat() {
        let ttl = Duration::from_secs(10);
        let store: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let settings = GrantSettings { batch: 4, ttl };
        let a = Slots::new("a".into(), store.clone(), settings);
        let b = Slots::new("b".into(), store, settings);
        for _ in 0..3 {
            a.admit("org", 20).await.expect("admitted");
        }
        let mut admitted = 0;
        while b.admit("org", 20).await.is_ok() {
            admitted += 1;
        }
        // a holds a batch of 4, one of them idle; b has the rest.
        assert_eq!(admitted, 16);
        a.admit("org", 20).await.expect("from a's own grant");
        assert!(matches!(
            a.admit("org", 20).await,
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
            b.admit("org", 20).await.expect("a's slots");
        }
        assert!(matches!(
            b.admit("org", 20).await,
            Err(NotAdmitted::AtLimit)
        ));
    }

    #[tokio::test]
    async fn a_lapsed_grant_is_asked_for_again_keeping_the_calls_in_flight() {
        let ttl = Duration::from_millis(200);
        let store: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let settings = GrantSettings { batch: 1, ttl };
        let (a, b) = (
            Slots::new("a".into(), store.clone(), settings),
            Slots::new("b".into(), store, settings),
        );
        a.admit("org", 2).await.expect("admitted");
        // No heartbeat: a's grant lapses, b may take the slot a left free
        // but not the one a's call still holds.
        tokio::time::sleep(ttl * 2).await;
        b.admit("org", 2).await.expect("the free slot");
        assert!(matches!(a.admit("org", 2).await, Err(NotAdmitted::AtLimit)));
        assert!(matches!(b.admit("org", 2).await, Err(NotAdmitted::AtLimit)));
    }
}
