//! The ports of runs that continue on another replica: where a run's
//! caller is kept while it runs, and how a replica takes over runs whose
//! own replica stopped.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Caller, RepositoryError};
use crate::domain::{entities::Run, ids::RunId};

/// A caller's token sealed to one run: only the keys of
/// SWITCHBOARD_RUN_CALLER_KEYS open it, and only for that run.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedCaller {
    /// The key it was sealed with.
    pub key_id: String,
    /// The sealed token, base64.
    pub sealed: String,
}

impl std::fmt::Debug for SealedCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedCaller")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Seals a run's caller, and opens it again on the replica that takes the
/// run over.
#[async_trait]
pub trait CallerKeeper: Send + Sync + 'static {
    /// `caller`'s token sealed to run `run_id`; `None` when the caller has
    /// no token.
    fn seal(&self, run_id: RunId, caller: &Caller) -> Option<SealedCaller>;
    /// Run `run_id`'s caller again: the token opened and verified now
    /// (signature, expiry, audience). Why not, as text for the run's
    /// record, when it cannot be.
    async fn open(&self, run_id: RunId, sealed: &SealedCaller) -> Result<Caller, String>;
}

/// A run this process took over.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The run as stored.
    pub run: Run,
    /// Its caller, sealed.
    pub caller: SealedCaller,
    /// How many times it was taken over, this one included.
    pub takeovers: u32,
}

/// Storage of the runs that continue on another replica.
#[async_trait]
pub trait RunTakeovers: Send + Sync + 'static {
    /// Keeps run `run_id`'s caller while this process runs it; cleared by
    /// any write that ends or pauses the run.
    async fn keep_caller(
        &self,
        run_id: RunId,
        sealed: &SealedCaller,
    ) -> Result<(), RepositoryError>;
    /// Makes this process the owner of at most `limit` running runs that
    /// keep their caller, were taken over fewer times than the limit, and
    /// whose lease expired (or whose process was this replica's previous
    /// one); each claim is one conditional write, so one replica wins a
    /// run.
    async fn claim_stopped_runs(&self, limit: u32) -> Result<Vec<Claimed>, RepositoryError>;
    /// Ends run `run_id`, which this process took over, as interrupted
    /// with `reason`.
    async fn interrupt_taken_over(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> Result<(), RepositoryError>;
}

/// The ports of runs that continue on another replica.
#[derive(Clone)]
pub struct Keeping {
    /// Their storage.
    pub store: Arc<dyn RunTakeovers>,
    /// Their callers, sealed and opened.
    pub keeper: Arc<dyn CallerKeeper>,
}

impl std::fmt::Debug for Keeping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeping").finish_non_exhaustive()
    }
}
