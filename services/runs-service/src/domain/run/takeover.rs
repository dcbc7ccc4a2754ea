//! Taking over runs whose replica stopped: the runs of agents that
//! continue (`recovery` CONTINUE) are claimed by one replica, their caller
//! opened and verified again, and driven on from what they recorded (see
//! `steps::recover`). A run that cannot continue ends interrupted, saying
//! why.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{
    context::{RunContext, Takeover, invoke_agent_span, load},
    drive::{Launch, RunTask},
    emitter::EmitterStart,
    lease::{ActiveRuns, TakeOver},
    run_limits::RunCounts,
};
use crate::domain::{
    error::RunsError,
    ports::{Claimed, Keeping, ModelProviders, RunsRepository},
};

/// Runs claimed per heartbeat at most: a replica takes its share of a
/// stopped replica's runs a batch at a time, leaving the rest to others.
pub(super) const CLAIMS_PER_BEAT: u32 = 16;

/// The continued run's event numbers start at `takeovers · 2³²`: above
/// any number the stopped replica sent, stored or not.
const EPOCH_BITS: u32 = 32;

/// Takes over runs whose replica stopped.
#[derive(Clone)]
pub struct RunTakeover {
    pub(super) repo: Arc<dyn RunsRepository>,
    pub(super) keeping: Keeping,
    pub(super) models: Arc<dyn ModelProviders>,
    pub(super) counts: RunCounts,
    pub(super) active: ActiveRuns,
    pub(super) task: RunTask,
    pub(super) max_stored_events: u64,
}

impl std::fmt::Debug for RunTakeover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTakeover").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl TakeOver for RunTakeover {
    /// Claims a batch of stopped runs that continue, and starts each one's
    /// task; how many were claimed.
    async fn take_over(&self) -> usize {
        let claimed = match self.keeping.store.claim_stopped_runs(CLAIMS_PER_BEAT).await {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(error = %error, "failed to look for runs to take over");
                return 0;
            }
        };
        let count = claimed.len();
        for run in claimed {
            let this = self.clone();
            tokio::spawn(async move { this.continue_run(run).await });
        }
        count
    }
}

impl RunTakeover {
    /// Continues one claimed run, or ends it interrupted saying why not.
    async fn continue_run(&self, claimed: Claimed) {
        let run_id = claimed.run.id;
        match self.context(&claimed).await {
            Ok(context) => {
                tracing::warn!(run_id = %run_id, takeovers = claimed.takeovers, "continuing a run whose replica stopped");
                self.launch(context, claimed).await;
            }
            Err(reason) => {
                tracing::warn!(run_id = %run_id, reason, "a run whose replica stopped cannot continue");
                if let Err(error) = self
                    .keeping
                    .store
                    .interrupt_taken_over(run_id, &reason)
                    .await
                {
                    tracing::error!(run_id = %run_id, error = %error, "failed to interrupt a run taken over");
                }
            }
        }
    }

    /// What the continued run needs: its caller, verified again, and its
    /// thread, agent and models as the caller sees them.
    async fn context(&self, claimed: &Claimed) -> Result<RunContext, String> {
        let run = &claimed.run;
        let caller = self.keeping.keeper.open(run.id, &claimed.caller).await?;
        let (thread, agent, models) = load(&*self.repo, &*self.models, &caller, run.thread_id)
            .await
            .map_err(|error| match error {
                RunsError::NotFound(_) => "its thread is not its caller's".to_owned(),
                other => other.to_string(),
            })?;
        let after_sequence = self.repo.last_run_event(run.id).await.unwrap_or(0);
        Ok(RunContext {
            caller,
            thread,
            agent,
            models,
            input: Vec::new(),
            resumed: Vec::new(),
            budget: None,
            takeover: Some(Takeover {
                after_sequence,
                takeovers: claimed.takeovers,
            }),
        })
    }

    /// Drives the run on a task of this process, as a detached run: its
    /// watchers follow it with `WatchRun`.
    async fn launch(&self, context: RunContext, claimed: Claimed) {
        let run = claimed.run;
        let epoch = i64::from(claimed.takeovers) << EPOCH_BITS;
        let after = context
            .takeover
            .map_or(epoch, |t| t.after_sequence.max(epoch));
        // Nobody reads the stream: watchers read the stored events.
        let (tx, _) = mpsc::channel(1);
        let launch = Launch {
            events: tx,
            halt: self.active.add(run.id),
            place: self.counts.take(&context.caller),
            start: EmitterStart {
                after,
                stored: 0,
                max_stored: self.max_stored_events,
                detached: true,
            },
        };
        let span = invoke_agent_span(&context, run.id);
        span.record("takeovers", claimed.takeovers);
        let task = self.task.clone();
        tracing::Instrument::instrument(task.drive(context, run, launch), span).await;
    }
}
