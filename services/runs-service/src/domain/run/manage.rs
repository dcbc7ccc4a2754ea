//! Run management from any replica: `CancelRun`.

use std::{sync::Arc, time::Duration};

use super::lease::{ActiveRuns, Halt};
use crate::domain::{
    entities::{Run, RunStatus},
    error::RunsError,
    ports::RunsRepository,
};

/// The error a run cancelled by `CancelRun` records.
pub(super) const CANCELLED: &str = "cancelled by CancelRun";

/// How long `CancelRun` waits for a run of this process to record its end.
const LOCAL_STOP_WAIT: Duration = Duration::from_secs(5);

/// Cancels runs: storage, where the request reaches a run of another
/// replica, and this process's runs, which it stops at once.
#[derive(Clone)]
pub(super) struct RunCanceller {
    pub(super) repo: Arc<dyn RunsRepository>,
    pub(super) active: ActiveRuns,
}

impl RunCanceller {
    /// Asks for the end of `run` (which the caller may see): a paused run,
    /// or one whose replica stopped, is cancelled at once; a running one is
    /// stopped by its replica: here at once, elsewhere at its next
    /// heartbeat. Returns the run as stored after.
    pub async fn cancel(&self, run: &Run) -> Result<Run, RunsError> {
        if !matches!(run.status, RunStatus::Running | RunStatus::RequiresAction) {
            return Err(RunsError::FailedPrecondition(format!(
                "the run already ended ({})",
                run.status.as_str()
            )));
        }
        let stored = self
            .repo
            .request_cancel(run.id, CANCELLED)
            .await?
            .ok_or(RunsError::NotFound("run"))?;
        if stored.status != RunStatus::Running {
            return Ok(stored);
        }
        if let Some(mut stopped) = self.active.halt_watch(run.id, Halt::Cancelled) {
            // The task drops its signal when it has recorded its end.
            let _ = tokio::time::timeout(LOCAL_STOP_WAIT, async {
                while stopped.changed().await.is_ok() {}
            })
            .await;
        }
        Ok(self.repo.find_run(run.id).await?.unwrap_or(stored))
    }
}
