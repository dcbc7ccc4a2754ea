//! Storing runs' events for `WatchRun`, for every run of this process at
//! once: events are queued as they are sent and written in batches (one
//! statement per batch) by one task, so a step's events cost one write
//! rather than one each, and a run's stream never waits on a write except
//! for its last event, which is stored before it is sent.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::domain::{events::Envelope, ports::RunsRepository};

/// Events written in one batch at most.
pub(super) const BATCH: usize = 256;

/// An event waiting to be stored, and who waits for it.
struct Queued {
    envelope: Envelope,
    stored: Option<oneshot::Sender<bool>>,
}

/// The queue of events to store; cloned into every run's emitter.
#[derive(Clone)]
pub(super) struct EventLog {
    queue: mpsc::Sender<Queued>,
}

impl EventLog {
    /// A log writing to `repo`, holding at most `capacity` events not yet
    /// written (a run sending past it waits for room). Its writer runs on
    /// this runtime until every clone is dropped.
    pub(super) fn spawn(repo: Arc<dyn RunsRepository>, capacity: usize) -> Self {
        let (queue, waiting) = mpsc::channel(capacity.max(1));
        tokio::spawn(write(repo, waiting));
        Self { queue }
    }

    /// Queues `envelope`; false when the log's writer has stopped.
    pub(super) async fn queue(&self, envelope: Envelope) -> bool {
        let queued = Queued {
            envelope,
            stored: None,
        };
        self.queue.send(queued).await.is_ok()
    }

    /// Stores `envelope` after every event queued before it; whether it was
    /// stored.
    pub(super) async fn store(&self, envelope: Envelope) -> bool {
        let (done, stored) = oneshot::channel();
        let queued = Queued {
            envelope,
            stored: Some(done),
        };
        if self.queue.send(queued).await.is_err() {
            return false;
        }
        stored.await.unwrap_or(false)
    }
}

/// The writer: takes what is queued, up to [`BATCH`] events, and stores it
/// in one write; a failed write is logged (the run's messages are its
/// record, the events a replay of how they came) and its waiters told.
async fn write(repo: Arc<dyn RunsRepository>, mut waiting: mpsc::Receiver<Queued>) {
    let mut batch = Vec::with_capacity(BATCH);
    while waiting.recv_many(&mut batch, BATCH).await > 0 {
        let (events, waiters): (Vec<_>, Vec<_>) =
            batch.drain(..).map(|q| (q.envelope, q.stored)).unzip();
        let stored = match repo.append_run_events(&events).await {
            Ok(()) => true,
            Err(error) => {
                let first = &events[0];
                tracing::warn!(
                    run_id = %first.run_id,
                    sequence = first.sequence,
                    events = events.len(),
                    error = %error,
                    "failed to store run events"
                );
                false
            }
        };
        for waiter in waiters.into_iter().flatten() {
            let _ = waiter.send(stored);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        domain::{events::RunEvent, ids::RunId},
        fakes::MemoryRepository,
    };

    fn event(run_id: RunId, sequence: i64) -> Envelope {
        Envelope {
            run_id,
            sequence,
            event: RunEvent::TextDelta(format!("part {sequence}")),
        }
    }

    #[tokio::test]
    async fn events_queued_before_a_stored_one_are_stored_with_it_in_order() {
        let repo = Arc::new(MemoryRepository::default());
        let log = EventLog::spawn(repo.clone(), 4);
        let run_id = RunId::new();
        for sequence in 1..=3 {
            assert!(log.queue(event(run_id, sequence)).await);
        }
        assert!(log.store(event(run_id, 4)).await);
        let stored = repo.run_events(run_id, 1, 100).await.expect("events");
        let sequences: Vec<i64> = stored.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, vec![1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_full_queue_makes_the_sender_wait_for_room_and_loses_nothing() {
        let repo = Arc::new(MemoryRepository::default());
        let log = EventLog::spawn(repo.clone(), 2);
        let run_id = RunId::new();
        // On this one-thread runtime the writer runs only when the test
        // yields: two events fill the queue, and a third waits for room.
        assert!(log.queue(event(run_id, 1)).await);
        assert!(log.queue(event(run_id, 2)).await);
        let mut third = std::pin::pin!(log.queue(event(run_id, 3)));
        assert!(futures::poll!(&mut third).is_pending(), "the queue is full");
        assert!(third.await, "room is made as the writer takes the queue");
        assert!(log.store(event(run_id, 4)).await);
        let stored = repo.run_events(run_id, 1, 100).await.expect("events");
        assert_eq!(stored.len(), 4);
    }
}
