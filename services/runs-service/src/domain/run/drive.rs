//! A run's task from start to end: its body, and what is recorded when it
//! stops before its end (the client left, `CancelRun`, a failure, or the
//! run ended elsewhere).

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::{
    context::{RunContext, save},
    emitter::{Emitter, EmitterStart, Stop},
    event_log::EventLog,
    lease::{ActiveRuns, Halt, halted},
    manage::CANCELLED,
    run_limits::RunPlace,
    steps::StepLoop,
};
use crate::domain::{
    entities::{Run, RunStatus},
    error::RunsError,
    events::{Envelope, RunEvent},
    ports::{RepositoryError, RunsRepository},
};

/// What the stream of a run another replica took over ends with.
const CONTINUES_ELSEWHERE: &str =
    "the run continues on another replica, which took it over; follow it there with WatchRun";

/// The error a run cancelled by its client's leaving records.
const DISCONNECTED: &str = "cancelled: the client closed the stream";

/// How a run's task was started.
pub(super) struct Launch {
    pub(super) events: mpsc::Sender<Envelope>,
    pub(super) halt: watch::Receiver<Option<Halt>>,
    pub(super) start: EmitterStart,
    /// The run's place among the runs in flight, held until its task ends.
    pub(super) place: RunPlace,
}

/// A run's task: storage, this process's runs in flight (which the task
/// joins and leaves), and the step loop it drives.
#[derive(Clone)]
pub(super) struct RunTask {
    pub(super) repo: Arc<dyn RunsRepository>,
    /// Where the run's events are stored.
    pub(super) events: EventLog,
    pub(super) active: ActiveRuns,
    pub(super) steps: StepLoop,
}

impl RunTask {
    /// Runs to the end, or until the client disconnects (unless the run is
    /// detached), `CancelRun` stops it, or this process loses its lease.
    pub(super) async fn drive(&self, context: RunContext, mut run: Run, launch: Launch) {
        let Launch {
            events: tx,
            halt,
            start,
            place,
        } = launch;
        let run_id = run.id;
        let detached = start.detached;
        let mut emitter = Emitter::new(tx.clone(), run_id, self.events.clone(), start);
        let outcome = tokio::select! {
            outcome = self.steps.execute(context, &mut run, &mut emitter) => outcome,
            () = tx.closed(), if !detached => Err(Stop::Disconnected),
            why = halted(halt) => Err(match why {
                Halt::Cancelled => Stop::Cancelled,
                Halt::LeaseLost => Stop::Ended,
            }),
        };
        match outcome {
            Ok(()) => {}
            Err(Stop::Disconnected) => {
                self.record_cancel(&mut run, &mut emitter, DISCONNECTED)
                    .await;
            }
            Err(Stop::Cancelled) => self.record_cancel(&mut run, &mut emitter, CANCELLED).await,
            Err(Stop::Failed(error)) => self.record_failure(&mut run, &mut emitter, error).await,
            Err(Stop::Ended) => self.report_ended_elsewhere(&run, &mut emitter).await,
        }
        self.active.remove(run_id, run.status);
        drop(place);
    }

    /// A run cancelled by its client's leaving or by `CancelRun`: dropping
    /// its future stopped the model stream and the tool calls in flight. A
    /// run still running in storage is saved as cancelled, with what this
    /// task knew of it (steps, usage, tools); one whose end was stored
    /// before keeps it. Watchers are told.
    async fn record_cancel(&self, run: &mut Run, emitter: &mut Emitter, reason: &str) {
        match self.repo.find_run(run.id).await {
            Ok(Some(stored)) if stored.status == RunStatus::Running => {
                run.status = RunStatus::Cancelled;
                run.error = Some(reason.to_owned());
                match save(&*self.repo, run).await {
                    Ok(()) => {
                        tracing::info!(run_id = %run.id, reason, "run cancelled");
                        let _ = emitter.emit(RunEvent::ending(run.clone())).await;
                    }
                    Err(RepositoryError::RunEnded) => {
                        self.report_ended_elsewhere(run, emitter).await
                    }
                    Err(error) => {
                        tracing::error!(run_id = %run.id, error = %error, "failed to record a cancelled run");
                    }
                }
            }
            Ok(_) => {}
            Err(error) => {
                tracing::error!(run_id = %run.id, error = %error, "failed to load a cancelled run")
            }
        }
    }

    /// A run that failed: recorded on the run and reported as `Failed`.
    async fn record_failure(&self, run: &mut Run, emitter: &mut Emitter, error: RunsError) {
        let message = match &error {
            RunsError::Internal(source) => {
                tracing::error!(run_id = %run.id, error = ?source, "run failed");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        run.status = RunStatus::Failed;
        run.error = Some(message.clone());
        if let Err(error) = save(&*self.repo, run).await {
            tracing::error!(run_id = %run.id, error = %error, "failed to record a failed run");
        }
        // The client may have gone meanwhile; nothing is left to tell.
        let _ = emitter
            .emit(RunEvent::Failed {
                run: run.clone(),
                error: message,
            })
            .await;
    }

    /// A run ended elsewhere while this process drove it, or this process
    /// lost its lease: nothing more is written to the run; the client is
    /// told what storage says. A run another replica took over (still
    /// running there) is not ended: the client is told where to follow it,
    /// and nothing is stored, so that the run's watchers follow the replica
    /// that runs it.
    async fn report_ended_elsewhere(&self, run: &Run, emitter: &mut Emitter) {
        let stored = match self.repo.find_run(run.id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => run.clone(),
            Err(error) => {
                tracing::error!(run_id = %run.id, error = %error, "failed to read an ended run");
                run.clone()
            }
        };
        tracing::warn!(run_id = %run.id, status = stored.status.as_str(), "the run was ended elsewhere or its lease lost; this process stops writing it");
        if stored.status == RunStatus::Running {
            let error = CONTINUES_ELSEWHERE.to_owned();
            let _ = emitter.tell(RunEvent::Failed { run: stored, error }).await;
            return;
        }
        let error = format!(
            "the run was ended elsewhere ({})",
            stored.error.as_deref().unwrap_or(stored.status.as_str())
        );
        let _ = emitter.emit(RunEvent::Failed { run: stored, error }).await;
    }
}
