//! Sending a run's events: numbered in order, streamed to the client that
//! started the run and stored for `WatchRun`; and why a run's body stopped
//! before its end.

use tokio::sync::mpsc;

use super::event_log::EventLog;
use crate::domain::{
    error::RunsError,
    events::{Envelope, RunEvent},
    ids::RunId,
    ports::RepositoryError,
};

/// Why a run's body stopped before its end.
#[derive(Debug)]
pub(super) enum Stop {
    /// The client went away (and did not ask the run to go on without it):
    /// the run is cancelled.
    Disconnected,
    /// `CancelRun` asked for the run's end: it is cancelled.
    Cancelled,
    /// The run failed; recorded on the run and reported.
    Failed(RunsError),
    /// The run was ended elsewhere (interrupted by a replica that saw its
    /// lease expire, cancelled), or this process lost its lease: this
    /// process stops writing it.
    Ended,
}

impl From<RunsError> for Stop {
    fn from(error: RunsError) -> Self {
        Self::Failed(error)
    }
}

impl From<RepositoryError> for Stop {
    fn from(error: RepositoryError) -> Self {
        match error {
            RepositoryError::RunEnded => Self::Ended,
            other => Self::Failed(other.into()),
        }
    }
}

/// Sends a run's events, numbering them, and stores them for `WatchRun`.
pub(super) struct Emitter {
    tx: mpsc::Sender<Envelope>,
    run_id: RunId,
    sequence: i64,
    /// Stored events; past `max_stored` only the last one is.
    stored: u64,
    max_stored: u64,
    log: EventLog,
    /// The run goes on when its client leaves.
    detached: bool,
    /// Whether the client still reads the stream.
    live: bool,
}

/// Where an [`Emitter`] starts.
pub(super) struct EmitterStart {
    /// The sequence of the run's last event so far (0 for a new run).
    pub(super) after: i64,
    /// How many of the run's events are stored already.
    pub(super) stored: u64,
    /// Events stored per run at most.
    pub(super) max_stored: u64,
    /// Whether the run goes on when its client leaves.
    pub(super) detached: bool,
}

impl Emitter {
    pub(super) fn new(
        tx: mpsc::Sender<Envelope>,
        run_id: RunId,
        log: EventLog,
        start: EmitterStart,
    ) -> Self {
        Self {
            tx,
            run_id,
            sequence: start.after,
            stored: start.stored,
            max_stored: start.max_stored,
            log,
            detached: start.detached,
            live: true,
        }
    }

    /// Stores and sends `event`; [`Stop::Disconnected`] when the client has
    /// gone and the run is not detached.
    pub(super) async fn emit(&mut self, event: RunEvent) -> Result<(), Stop> {
        let envelope = self.numbered(event);
        self.store(&envelope).await;
        self.send(envelope).await
    }

    /// Sends `event` to the client without storing it: what this process
    /// says of a run it no longer owns, which its watchers must not read as
    /// the run's.
    pub(super) async fn tell(&mut self, event: RunEvent) -> Result<(), Stop> {
        let envelope = self.numbered(event);
        self.send(envelope).await
    }

    /// `event` with the run's next sequence.
    fn numbered(&mut self, event: RunEvent) -> Envelope {
        self.sequence += 1;
        Envelope {
            run_id: self.run_id,
            sequence: self.sequence,
            event,
        }
    }

    /// Sends `envelope` while the client reads the stream.
    async fn send(&mut self, envelope: Envelope) -> Result<(), Stop> {
        if self.live && self.tx.send(envelope).await.is_err() {
            if !self.detached {
                return Err(Stop::Disconnected);
            }
            self.live = false;
        }
        Ok(())
    }

    /// Stores `envelope` for watchers, within the run's bound: queued, or
    /// for the run's last event stored before it is sent, so that a watcher
    /// or a next run finds it. A failure is logged by the log's writer, not
    /// fatal: the run's messages are its record, the events a replay of
    /// how they came.
    async fn store(&mut self, envelope: &Envelope) {
        let last = envelope.event.is_last();
        if self.stored >= self.max_stored && !last {
            return;
        }
        self.stored += 1;
        let kept = if last {
            self.log.store(envelope.clone()).await
        } else {
            self.log.queue(envelope.clone()).await
        };
        if !kept {
            tracing::warn!(run_id = %self.run_id, sequence = envelope.sequence, "a run event was not stored");
        }
    }
}
