//! Each organization's compiled policies, kept for a short time so that a
//! call does not read the database, and each policy version compiled once.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use cel::Env;

use super::{
    decide::{CompiledPolicy, PolicySet},
    error::PolicyError,
    ports::PolicyRepository,
};
use crate::domain::integration::OrgId;

/// Most organizations whose policies are kept at once; past it, entries
/// past their time to live go first, then everything.
const MAX_CACHED_ORGS: usize = 10_000;

/// An organization's compiled policies and when they were read; `None`
/// once a write through this process made them stale.
type Entry = (Option<Instant>, Arc<PolicySet>);

/// The compiled policies of the organizations lately called.
///
/// Writes through this process drop the organization's entry at once;
/// other replicas see a change within the time to live.
pub struct PolicyEngine {
    repository: Arc<dyn PolicyRepository>,
    ttl: Duration,
    env: Arc<Env>,
    sets: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for PolicyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEngine")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl PolicyEngine {
    /// Policies from `repository`, each organization's kept for `ttl`.
    pub fn new(repository: Arc<dyn PolicyRepository>, ttl: Duration) -> Self {
        Self {
            repository,
            ttl,
            env: Arc::new(Env::stdlib()),
            sets: Mutex::default(),
        }
    }

    /// The CEL environment conditions compile and run in.
    pub fn env(&self) -> &Arc<Env> {
        &self.env
    }

    /// Where the policies are kept.
    pub fn repository(&self) -> &Arc<dyn PolicyRepository> {
        &self.repository
    }

    fn cached(&self, org: &OrgId) -> Option<Entry> {
        let sets = self.sets.lock().ok()?;
        sets.get(&org.0).cloned()
    }

    /// The organization's compiled policies, from the cache while fresh.
    pub async fn set_for(&self, org: &OrgId) -> Result<Arc<PolicySet>, PolicyError> {
        let previous = self.cached(org);
        if let Some((Some(at), set)) = &previous
            && at.elapsed() < self.ttl
        {
            return Ok(set.clone());
        }
        let current = self
            .repository
            .current(org)
            .await
            .map_err(|e| PolicyError::Internal(anyhow::Error::new(e)))?;
        // A version compiled before is reused: versions never change.
        let compiled: HashMap<(String, i64), Arc<CompiledPolicy>> = previous
            .map(|(_, set)| {
                set.policies()
                    .iter()
                    .map(|p| ((p.version.name.to_string(), p.version.version), p.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut policies = Vec::with_capacity(current.len());
        for version in current {
            let key = (version.name.to_string(), version.version);
            let policy = match compiled.get(&key) {
                Some(policy) => policy.clone(),
                None => Arc::new(self.compile_stored(version)?),
            };
            policies.push(policy);
        }
        let set = Arc::new(PolicySet::new(policies, self.env.clone()));
        self.remember(org, set.clone());
        Ok(set)
    }

    /// A stored version compiles, as it did when written; one that does not
    /// (a changed CEL library, a hand-edited row) is an internal error, so
    /// that no call goes ahead without its rules.
    fn compile_stored(
        &self,
        version: super::model::PolicyVersion,
    ) -> Result<CompiledPolicy, PolicyError> {
        let name = version.name.to_string();
        CompiledPolicy::compile(version, &self.env)
            .map_err(|(i, e)| anyhow::anyhow!("rule {i}: {e}"))
            .with_context(|| format!("stored policy `{name}` does not compile"))
            .map_err(PolicyError::Internal)
    }

    fn remember(&self, org: &OrgId, set: Arc<PolicySet>) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut sets) = self.sets.lock() {
            if sets.len() >= MAX_CACHED_ORGS {
                sets.retain(|_, (at, _)| at.is_some_and(|at| at.elapsed() < self.ttl));
                if sets.len() >= MAX_CACHED_ORGS {
                    sets.clear();
                }
            }
            sets.insert(org.0.clone(), (Some(Instant::now()), set));
        }
    }

    /// Marks the organization's entry stale after a write through this
    /// process, so that the change holds here at once (its unchanged
    /// versions stay compiled).
    pub fn forget(&self, org: &OrgId) {
        if let Ok(mut sets) = self.sets.lock()
            && let Some((at, _)) = sets.get_mut(&org.0)
        {
            *at = None;
        }
    }
}
