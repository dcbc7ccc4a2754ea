//! Runs in flight per organization and per user, on every replica.
//!
//! A run outlives the call that started it (a detached run goes on after
//! its client left), so the server's per-organization call limits do not
//! bound runs: each run holds a place here from before it is recorded until
//! its task ends, and a run starts only while the runs running on all
//! replicas together, read from the database, are below the limits. The
//! read and the new run's record are not one transaction: runs started at
//! the same moment on different replicas may pass together, at most one
//! over the limit per other replica starting one.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use crate::domain::{
    error::RunsError,
    ports::{Caller, RunsRepository},
};

/// How many runs may be in flight at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// Runs of one organization.
    pub per_org: usize,
    /// Runs of one user of an organization.
    pub per_user: usize,
}

#[derive(Debug, Default)]
struct Counts {
    /// Runs per organization; an organization with none has no entry.
    orgs: HashMap<String, usize>,
    /// Runs per (organization, user); a user with none has no entry.
    users: HashMap<(String, String), usize>,
}

/// The runs in flight of every organization and user on this replica.
#[derive(Debug, Clone)]
pub(super) struct RunCounts {
    limits: RunLimits,
    counts: Arc<Mutex<Counts>>,
}

/// One run's place, given back when dropped.
#[derive(Debug)]
pub(super) struct RunPlace {
    counts: Arc<Mutex<Counts>>,
    org: String,
    user: String,
}

fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    // Plain counts that every holder leaves consistent: a panic elsewhere
    // while holding them leaves nothing to repair.
    counts.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes one from `map[key]`, removing the entry at zero.
fn give_back<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: &K) {
    if let Some(count) = map.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            map.remove(key);
        }
    }
}

impl RunCounts {
    pub(super) fn new(limits: RunLimits) -> Self {
        Self {
            limits,
            counts: Arc::default(),
        }
    }

    /// A place for one more run of `caller`, or RESOURCE_EXHAUSTED.
    pub(super) fn reserve(&self, caller: &Caller) -> Result<RunPlace, RunsError> {
        let org = &caller.principal.org_id;
        let user = &caller.principal.user_id;
        let key = (org.clone(), user.clone());
        let mut counts = lock(&self.counts);
        let org_runs = counts.orgs.get(org).copied().unwrap_or(0);
        let user_runs = counts.users.get(&key).copied().unwrap_or(0);
        self.refuse_past(org_runs as u64, user_runs as u64)?;
        *counts.orgs.entry(org.clone()).or_insert(0) += 1;
        *counts.users.entry(key).or_insert(0) += 1;
        Ok(RunPlace {
            counts: self.counts.clone(),
            org: org.clone(),
            user: user.clone(),
        })
    }

    /// A place for a run of `caller` that was admitted on another replica
    /// and continues here: counted, never refused (it counted against the
    /// limits when it started, and still does on every replica).
    pub(super) fn take(&self, caller: &Caller) -> RunPlace {
        let org = &caller.principal.org_id;
        let user = &caller.principal.user_id;
        let mut counts = lock(&self.counts);
        *counts.orgs.entry(org.clone()).or_insert(0) += 1;
        *counts.users.entry((org.clone(), user.clone())).or_insert(0) += 1;
        RunPlace {
            counts: self.counts.clone(),
            org: org.clone(),
            user: user.clone(),
        }
    }

    /// Refuses a run of `caller` while the runs running on all replicas
    /// already reach the organization's or the user's limit. The caller
    /// holds a place on this replica (its own run is not recorded yet).
    pub(super) async fn check_all_replicas(
        &self,
        repo: &dyn RunsRepository,
        caller: &Caller,
    ) -> Result<(), RunsError> {
        let live = repo
            .live_runs(&caller.principal.org_id, &caller.principal.user_id)
            .await?;
        self.refuse_past(live.org, live.user)
    }

    /// The refusal of one more run beside `org_runs` of the organization
    /// and `user_runs` of the user.
    fn refuse_past(&self, org_runs: u64, user_runs: u64) -> Result<(), RunsError> {
        if org_runs >= self.limits.per_org as u64 {
            return Err(RunsError::RunLimit(format!(
                "your organization has {} runs in flight, its limit; retry when one ends",
                self.limits.per_org
            )));
        }
        if user_runs >= self.limits.per_user as u64 {
            return Err(RunsError::RunLimit(format!(
                "you have {} runs in flight, your limit; retry when one ends",
                self.limits.per_user
            )));
        }
        Ok(())
    }
}

impl Drop for RunPlace {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        give_back(&mut counts.orgs, &self.org);
        let key = (
            std::mem::take(&mut self.org),
            std::mem::take(&mut self.user),
        );
        give_back(&mut counts.users, &key);
    }
}

#[cfg(test)]
mod tests {
    use switchboard_auth::Principal;

    use super::*;

    fn caller(org: &str, user: &str) -> Caller {
        Caller {
            principal: Principal::new(org, user, vec![]),
            token: None,
        }
    }

    #[test]
    fn places_are_counted_per_organization_and_per_user_and_given_back() {
        let counts = RunCounts::new(RunLimits {
            per_org: 3,
            per_user: 2,
        });
        let a1 = counts.reserve(&caller("a", "ann")).expect("first");
        let a2 = counts.reserve(&caller("a", "ann")).expect("second");
        let refused = counts.reserve(&caller("a", "ann")).expect_err("user limit");
        assert!(matches!(refused, RunsError::RunLimit(m) if m.contains("you have 2")));
        let a3 = counts.reserve(&caller("a", "bob")).expect("another user");
        let refused = counts.reserve(&caller("a", "cat")).expect_err("org limit");
        assert!(matches!(refused, RunsError::RunLimit(m) if m.contains("organization has 3")));
        counts
            .reserve(&caller("b", "ann"))
            .expect("another organization");
        drop(a1);
        counts
            .reserve(&caller("a", "ann"))
            .expect("a place was given back");
        drop(a2);
        drop(a3);
        assert!(lock(&counts.counts).orgs.is_empty());
        assert!(lock(&counts.counts).users.is_empty());
    }
}
