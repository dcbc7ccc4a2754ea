//! `WatchRun`: a run's events from a sequence number, on any replica. The
//! stored events are read first, then storage is polled for new ones until
//! the run's last event; a run that ended without one (its replica stopped)
//! gets an ending made from its stored state.

use std::{sync::Arc, time::Duration};

use tokio::sync::mpsc;

use super::{Envelope, Orchestrator, RunEvent};
use crate::domain::{
    entities::{Run, RunStatus},
    error::RunsError,
    ports::RunsRepository,
};

/// Events read from storage at once.
const PAGE: u32 = 256;

/// How `WatchRun` follows a run.
#[derive(Debug, Clone, Copy)]
pub struct WatchSettings {
    /// How often storage is read for new events of a quiet run.
    pub poll_every: Duration,
    /// How long a run that ended may take to store its last event before
    /// the watcher is sent an ending made from the run's state.
    pub end_grace: Duration,
}

impl Orchestrator {
    /// The events of `run` (which the caller may see) with `sequence >=
    /// from`, then the new ones until its last event.
    pub fn watch(&self, run: &Run, from: i64) -> mpsc::Receiver<Result<Envelope, RunsError>> {
        let (tx, rx) = mpsc::channel(64);
        let follow = Follow {
            repo: Arc::clone(&self.ports.repo),
            settings: self.settings.watch,
            run_id: run.id.clone(),
            next: from.max(1),
        };
        tokio::spawn(follow.run(tx));
        rx
    }
}

struct Follow {
    repo: Arc<dyn RunsRepository>,
    settings: WatchSettings,
    run_id: String,
    next: i64,
}

type Watcher = mpsc::Sender<Result<Envelope, RunsError>>;

impl Follow {
    async fn run(mut self, tx: Watcher) {
        if let Err(error) = self.follow(&tx).await {
            let _ = tx.send(Err(error)).await;
        }
    }

    async fn follow(&mut self, tx: &Watcher) -> Result<(), RunsError> {
        let mut waited_for_end = Duration::ZERO;
        loop {
            let events = self.repo.run_events(&self.run_id, self.next, PAGE).await?;
            if !events.is_empty() {
                waited_for_end = Duration::ZERO;
                for envelope in events {
                    self.next = envelope.sequence + 1;
                    let last = envelope.event.is_last();
                    if tx.send(Ok(envelope)).await.is_err() || last {
                        return Ok(());
                    }
                }
                continue;
            }
            let Some(run) = self.repo.find_run(&self.run_id).await? else {
                return Err(RunsError::NotFound("run"));
            };
            if run.status != RunStatus::Running {
                // An interrupted run's replica stopped: no last event comes.
                if run.status == RunStatus::Interrupted || waited_for_end >= self.settings.end_grace
                {
                    let _ = tx.send(Ok(self.ending(run))).await;
                    return Ok(());
                }
                waited_for_end += self.settings.poll_every;
            }
            tokio::select! {
                () = tokio::time::sleep(self.settings.poll_every) => {}
                () = tx.closed() => return Ok(()),
            }
        }
    }

    fn ending(&self, run: Run) -> Envelope {
        Envelope {
            run_id: self.run_id.clone(),
            sequence: self.next,
            event: RunEvent::ending(run),
        }
    }
}
