//! One replica's calls per second per organization, spent from tokens it
//! took from the organization's shared bucket ([`TokenBuckets`]).
//!
//! A call spends a token the replica holds without a round trip; only a
//! call that finds none asks the bucket for a batch. When the bucket is
//! empty, the replica remembers until when, and refuses the calls that
//! come before then at once: a flood past the rate costs the database one
//! question per token the rate makes, not one per call.

use std::{
    collections::HashMap,
    num::NonZeroU32,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use super::tokens::{TokenAsk, TokenBuckets};

/// Why a call was not admitted.
#[derive(Debug)]
pub enum OverRate {
    /// The organization spent its bucket; a token comes after this long.
    Empty(Duration),
    /// The bucket could not be asked.
    Store(anyhow::Error),
}

#[derive(Debug, Default)]
struct OrgTokens {
    /// Tokens taken from the bucket and not spent yet.
    held: u32,
    /// The bucket was empty; no token before then.
    empty_until: Option<Instant>,
    /// Held while the bucket is asked for this organization, so that one
    /// replica's questions of one organization never cross.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// A call came since the last [`Rate::forget_idle`].
    used: bool,
}

impl OrgTokens {
    /// Spends a token held, or says the bucket is empty until when.
    fn spend(&mut self, now: Instant) -> Option<Result<(), OverRate>> {
        self.used = true;
        if self.held > 0 {
            self.held -= 1;
            return Some(Ok(()));
        }
        match self.empty_until {
            Some(until) if now < until => Some(Err(OverRate::Empty(until - now))),
            _ => None,
        }
    }
}

/// One replica's tokens, per organization.
#[derive(Debug)]
pub struct Rate {
    store: Arc<dyn TokenBuckets>,
    /// Tokens asked for at once, far from an empty bucket.
    batch: u32,
    orgs: Mutex<HashMap<String, OrgTokens>>,
}

impl Rate {
    /// Tokens taken from `store`, `batch` at a time.
    pub fn new(store: Arc<dyn TokenBuckets>, batch: u32) -> Self {
        Self {
            store,
            batch,
            orgs: Mutex::new(HashMap::new()),
        }
    }

    fn locked(&self) -> MutexGuard<'_, HashMap<String, OrgTokens>> {
        // Plain counts that every holder leaves consistent: a panic
        // elsewhere while holding them leaves nothing to repair.
        self.orgs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Spends a token of `org`, whose bucket fills at `rate` up to `burst`,
    /// asking the bucket for more when this replica holds none.
    pub async fn admit(
        &self,
        org: &str,
        rate: NonZeroU32,
        burst: NonZeroU32,
    ) -> Result<(), OverRate> {
        let asking = {
            let mut orgs = self.locked();
            let tokens = orgs.entry(org.to_owned()).or_default();
            if let Some(done) = tokens.spend(Instant::now()) {
                return done;
            }
            tokens.asking.clone()
        };
        let _asking = asking.lock().await;
        // Another call may have taken tokens while this one waited.
        if let Some(done) = self.spend(org) {
            return done;
        }
        let ask = TokenAsk {
            want: self.batch,
            rate,
            burst,
        };
        let taken = self.store.take(org, ask).await.map_err(OverRate::Store)?;
        let mut orgs = self.locked();
        let tokens = orgs.entry(org.to_owned()).or_default();
        if taken.tokens == 0 {
            tokens.empty_until = Some(Instant::now() + taken.retry_after);
            return Err(OverRate::Empty(taken.retry_after));
        }
        tokens.empty_until = None;
        tokens.held = taken.tokens - 1;
        Ok(())
    }

    fn spend(&self, org: &str) -> Option<Result<(), OverRate>> {
        self.locked()
            .entry(org.to_owned())
            .or_default()
            .spend(Instant::now())
    }

    /// Forgets the organizations no call came for since the last time, and
    /// the few tokens they held (which only lowers what they may spend).
    pub fn forget_idle(&self) {
        self.locked().retain(|_, tokens| {
            let keep = tokens.used || Arc::strong_count(&tokens.asking) > 1;
            tokens.used = false;
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::org_limits::tokens::MemoryTokenBuckets;

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("not zero")
    }

    #[tokio::test]
    async fn two_replicas_spend_one_bucket_between_them() {
        let store: Arc<dyn TokenBuckets> = Arc::new(MemoryTokenBuckets::new());
        let (a, b) = (Rate::new(store.clone(), 4), Rate::new(store, 4));
        let mut admitted = 0;
        for _ in 0..20 {
            for replica in [&a, &b] {
                if replica.admit("org", nz(1), nz(12)).await.is_ok() {
                    admitted += 1;
                }
            }
        }
        assert_eq!(admitted, 12, "the burst, shared");
        let Err(OverRate::Empty(wait)) = a.admit("org", nz(1), nz(12)).await else {
            panic!("the bucket is empty");
        };
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        b.admit("other", nz(1), nz(12))
            .await
            .expect("another organization has its own bucket");
    }

    #[tokio::test]
    async fn an_empty_bucket_is_not_asked_again_before_its_next_token() {
        let store = Arc::new(MemoryTokenBuckets::new());
        let rate = Rate::new(store, 8);
        rate.admit("org", nz(2), nz(1)).await.expect("the burst");
        assert!(rate.admit("org", nz(2), nz(1)).await.is_err());
        assert!(rate.locked()["org"].empty_until.is_some());
        tokio::time::sleep(Duration::from_millis(550)).await;
        rate.admit("org", nz(2), nz(1))
            .await
            .expect("a token half a second later");
        rate.forget_idle();
        rate.forget_idle();
        assert!(
            rate.locked().is_empty(),
            "an idle organization is forgotten"
        );
    }
}
