//! Run leases across replicas. A replica owns the runs it executes; its
//! heartbeats renew their leases on the database's clock (so replicas whose
//! clocks disagree still agree on when a lease ran out), carry `CancelRun`
//! requests made on other replicas to the owner, and tell a replica that
//! lost a run (its lease expired and another replica interrupted it or took
//! it over) to stop writing it. The same loop takes over the stopped runs
//! that continue (their agent's `recovery`), and interrupts the others
//! whose lease expired.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Weak},
    time::{Duration, Instant},
};

use tokio::sync::watch;

use crate::domain::{
    entities::RunStatus,
    ids::RunId,
    ports::{LeaseState, RunsRepository},
};

/// Why this process must stop a run it executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// `CancelRun` asked for it.
    Cancelled,
    /// This process no longer holds the run's lease.
    LeaseLost,
}

/// The runs this process is executing, with the signal that stops each.
#[derive(Debug, Clone, Default)]
pub struct ActiveRuns(Arc<Mutex<HashMap<RunId, watch::Sender<Option<Halt>>>>>);

impl ActiveRuns {
    /// The ids, now.
    pub fn ids(&self) -> Vec<RunId> {
        self.0
            .lock()
            .map(|runs| runs.keys().copied().collect())
            .unwrap_or_default()
    }

    /// Stops the run `id` if this process executes it; false otherwise.
    pub fn halt(&self, id: RunId, why: Halt) -> bool {
        let Ok(runs) = self.0.lock() else {
            return false;
        };
        runs.get(&id).is_some_and(|halt| {
            halt.send_replace(Some(why));
            true
        })
    }

    /// Stops the run `id` if this process executes it, and returns a
    /// signal whose sender is dropped when the run's task ends.
    pub(super) fn halt_watch(&self, id: RunId, why: Halt) -> Option<watch::Receiver<Option<Halt>>> {
        let runs = self.0.lock().ok()?;
        let halt = runs.get(&id)?;
        halt.send_replace(Some(why));
        let mut stopped = halt.subscribe();
        stopped.borrow_and_update();
        Some(stopped)
    }

    /// Stops every run of this process.
    fn halt_all(&self, why: Halt) {
        for id in self.ids() {
            self.halt(id, why);
        }
    }

    pub(super) fn add(&self, id: RunId) -> watch::Receiver<Option<Halt>> {
        let (tx, rx) = watch::channel(None);
        if let Ok(mut runs) = self.0.lock()
            && runs.insert(id, tx).is_none()
        {
            crate::metrics::run_started();
        }
        rx
    }

    pub(super) fn remove(&self, id: RunId, status: RunStatus) {
        if let Ok(mut runs) = self.0.lock()
            && runs.remove(&id).is_some()
        {
            crate::metrics::run_finished(status.as_str());
        }
    }
}

/// Resolves when the run is to stop.
pub(super) async fn halted(mut halt: watch::Receiver<Option<Halt>>) -> Halt {
    loop {
        if let Some(why) = *halt.borrow_and_update() {
            return why;
        }
        if halt.changed().await.is_err() {
            // The run was removed from the active set: it is ending anyway.
            return std::future::pending().await;
        }
    }
}

/// Takes over, each heartbeat, the stopped runs that continue (see
/// `takeover`).
#[async_trait::async_trait]
pub trait TakeOver: Send + Sync {
    /// Claims a batch of stopped runs and starts them; how many.
    async fn take_over(&self) -> usize;
}

/// How leases are kept.
#[derive(Debug, Clone, Copy)]
pub struct LeaseSettings {
    /// How long a lease lasts past its last heartbeat.
    pub lease: Duration,
    /// How often this process renews its leases and looks for expired ones.
    pub heartbeat_every: Duration,
}

/// Renews the leases of this process's runs, takes over stopped runs that
/// continue (with `takeover`) and interrupts the other runs whose lease
/// expired, until the repository is dropped.
pub fn keep_leases(
    repo: Weak<dyn RunsRepository>,
    active: ActiveRuns,
    settings: LeaseSettings,
    takeover: Option<Weak<dyn TakeOver>>,
) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(settings.heartbeat_every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Leases are counted from the last heartbeat that succeeded; the
        // time is taken before it was sent, so this side never believes in
        // a lease longer than the database does.
        let mut renewed = Instant::now();
        loop {
            ticker.tick().await;
            let Some(repo) = repo.upgrade() else { break };
            let sent = Instant::now();
            match repo.heartbeat(&active.ids()).await {
                Ok(states) => {
                    renewed = sent;
                    apply(&active, states);
                }
                Err(error) => {
                    tracing::warn!(error = %error, "failed to renew run leases");
                    if renewed.elapsed() >= settings.lease {
                        tracing::warn!(
                            "run leases expired without a heartbeat; stopping this process's runs"
                        );
                        active.halt_all(Halt::LeaseLost);
                    }
                }
            }
            if let Some(takeover) = takeover.as_ref().and_then(Weak::upgrade) {
                match takeover.take_over().await {
                    0 => {}
                    runs => tracing::warn!(runs, "took over runs whose replica stopped"),
                }
            }
            match repo.interrupt_expired_runs().await {
                Ok(0) => {}
                Ok(runs) => tracing::warn!(runs, "marked runs whose lease expired as interrupted"),
                Err(error) => {
                    tracing::warn!(error = %error, "failed to check for expired run leases")
                }
            }
        }
    });
}

/// Stops the runs a heartbeat found cancelled or lost.
fn apply(active: &ActiveRuns, states: Vec<(RunId, LeaseState)>) {
    for (id, state) in states {
        match state {
            LeaseState::Held => {}
            LeaseState::CancelRequested => {
                active.halt(id, Halt::Cancelled);
            }
            LeaseState::Lost => {
                tracing::warn!(run_id = %id, "this process lost the run's lease; it stops writing it");
                active.halt(id, Halt::LeaseLost);
            }
        }
    }
}
