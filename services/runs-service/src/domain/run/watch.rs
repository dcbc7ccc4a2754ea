//! `WatchRun`: a run's events from a sequence number, on any replica. The
//! stored events from the watcher's `from` are read first, then the run's
//! feed ([`super::feed`]), one storage poll shared by every watcher of the
//! run on this replica, carries the new ones until the run's last event; a
//! run that ended without one (its replica stopped) gets an ending made
//! from its stored state.

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

use super::feed::{Feeds, Item, PAGE, WatchSettings};
use crate::domain::{
    entities::Run, error::RunsError, events::Envelope, ids::RunId, ports::RunsRepository,
};

/// Follows runs for `WatchRun`: storage, and the feeds shared by the
/// watchers of each run on this replica.
#[derive(Clone)]
pub(super) struct RunWatcher {
    pub(super) repo: Arc<dyn RunsRepository>,
    pub(super) feeds: Feeds,
    pub(super) settings: WatchSettings,
}

impl RunWatcher {
    /// The events of `run` (which the caller may see) with `sequence >=
    /// from`, then the new ones until its last event.
    pub fn watch(&self, run: &Run, from: i64) -> mpsc::Receiver<Result<Envelope, RunsError>> {
        let (tx, rx) = mpsc::channel(64);
        let follow = Follow {
            repo: Arc::clone(&self.repo),
            feeds: self.feeds.clone(),
            settings: self.settings,
            run_id: run.id,
            next: from.max(1),
        };
        tokio::spawn(follow.run(tx));
        rx
    }
}

struct Follow {
    repo: Arc<dyn RunsRepository>,
    feeds: Feeds,
    settings: WatchSettings,
    run_id: RunId,
    next: i64,
}

type Watcher = mpsc::Sender<Result<Envelope, RunsError>>;

/// Whether a watcher is done: it got the run's last event, or left.
type Done = bool;

impl Follow {
    async fn run(mut self, tx: Watcher) {
        if let Err(error) = self.follow(&tx).await {
            let _ = tx.send(Err(error)).await;
        }
    }

    async fn follow(&mut self, tx: &Watcher) -> Result<(), RunsError> {
        // A feed that stopped without this watcher's last event (it had
        // just ended as this watcher joined) is joined again.
        loop {
            // Subscribed before reading storage: whatever the feed sends
            // from now on is in the subscription, whatever it sent before
            // is stored and read below.
            let mut feed = self.feeds.subscribe(self.run_id, &self.repo, self.settings);
            if self.catch_up(tx, None).await? {
                return Ok(());
            }
            if self.listen(tx, &mut feed).await? {
                return Ok(());
            }
        }
    }

    /// Forwards the feed until the watcher is done, or the feed stopped.
    async fn listen(
        &mut self,
        tx: &Watcher,
        feed: &mut broadcast::Receiver<Item>,
    ) -> Result<Done, RunsError> {
        loop {
            let item = tokio::select! {
                item = feed.recv() => item,
                () = tx.closed() => return Ok(true),
            };
            let done = match item {
                Ok(Item::Event(envelope)) => {
                    self.forward(tx, Arc::unwrap_or_clone(envelope)).await?
                }
                Ok(Item::Failed(error)) => return Err(error.into()),
                // Fell behind the feed: what it missed is stored.
                Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up(tx, None).await?,
                Err(broadcast::error::RecvError::Closed) => return Ok(false),
            };
            if done {
                return Ok(true);
            }
        }
    }

    /// Sends `envelope` of the feed in its place: what this watcher has
    /// sent already is skipped, what it lacks before it is read first.
    async fn forward(&mut self, tx: &Watcher, envelope: Envelope) -> Result<Done, RunsError> {
        if envelope.sequence > self.next && self.catch_up(tx, Some(envelope.sequence)).await? {
            return Ok(true);
        }
        if envelope.sequence < self.next {
            return Ok(false);
        }
        Ok(self.send(tx, envelope).await)
    }

    /// Sends the stored events from `next` (before `until`, when given)
    /// until storage has no more.
    async fn catch_up(&mut self, tx: &Watcher, until: Option<i64>) -> Result<Done, RunsError> {
        loop {
            let events = self.repo.run_events(self.run_id, self.next, PAGE).await?;
            if events.is_empty() {
                return Ok(false);
            }
            for envelope in events {
                if until.is_some_and(|until| envelope.sequence >= until) {
                    return Ok(false);
                }
                if self.send(tx, envelope).await {
                    return Ok(true);
                }
            }
        }
    }

    async fn send(&mut self, tx: &Watcher, envelope: Envelope) -> Done {
        self.next = envelope.sequence + 1;
        let last = envelope.event.is_last();
        tx.send(Ok(envelope)).await.is_err() || last
    }
}
