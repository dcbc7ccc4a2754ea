//! One storage poll per watched run on this replica, fanned out to all its
//! watchers.
//!
//! Without it every `WatchRun` stream polled storage on its own: N
//! watchers of one run made N reads per interval. Here the first watcher of
//! a run starts its feed, every later one subscribes to it, and the feed
//! stops when its last watcher leaves or the run ends. A watcher reads
//! storage itself only to catch up (its own `from`, or after it fell
//! behind the feed).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::sync::broadcast;

use crate::domain::{
    entities::RunStatus,
    error::RunsError,
    events::{Envelope, RunEvent},
    ids::RunId,
    ports::RunsRepository,
};

/// How `WatchRun` follows a run.
#[derive(Debug, Clone, Copy)]
pub struct WatchSettings {
    /// How often storage is read for new events of a quiet run.
    pub poll_every: Duration,
    /// How long a run that ended may take to store its last event before
    /// the watcher is sent an ending made from the run's state.
    pub end_grace: Duration,
}

/// Events read from storage at once.
pub(super) const PAGE: u32 = 256;

/// What a feed sends its watchers.
#[derive(Debug, Clone)]
pub(super) enum Item {
    /// The run's next event: stored, or the ending made from the state of
    /// a run that ended without storing its last event. Shared: every
    /// watcher gets the same one.
    Event(Arc<Envelope>),
    /// The feed stopped on this error.
    Failed(FeedError),
}

/// Why a feed stopped early.
#[derive(Debug, Clone)]
pub(super) enum FeedError {
    /// The run is gone.
    Gone,
    /// Storage failed; the text is logged, not shown.
    Storage(String),
}

impl From<FeedError> for RunsError {
    fn from(error: FeedError) -> Self {
        match error {
            FeedError::Gone => Self::NotFound("run"),
            FeedError::Storage(error) => {
                Self::Internal(anyhow::anyhow!("failed to read a run's events: {error}"))
            }
        }
    }
}

type Senders = HashMap<RunId, broadcast::Sender<Item>>;

/// The feeds of the runs being watched on this replica, by run id. Only
/// watchers allowed to see a run (checked before they subscribe) reach its
/// feed, and a feed carries nothing but that run's events.
#[derive(Debug, Clone, Default)]
pub(super) struct Feeds(Arc<Mutex<Senders>>);

fn lock(feeds: &Mutex<Senders>) -> MutexGuard<'_, Senders> {
    // Senders only; every holder leaves the map consistent.
    feeds.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Feeds {
    /// A subscription to `run_id`'s feed, started if the run has none.
    pub(super) fn subscribe(
        &self,
        run_id: RunId,
        repo: &Arc<dyn RunsRepository>,
        settings: WatchSettings,
    ) -> broadcast::Receiver<Item> {
        let mut feeds = lock(&self.0);
        if let Some(feed) = feeds.get(&run_id) {
            return feed.subscribe();
        }
        // Events past the capacity are read from storage by the watchers
        // that fell behind, so a slow watcher never holds the feed back.
        let (tx, rx) = broadcast::channel(PAGE as usize);
        feeds.insert(run_id, tx.clone());
        let poll = Poll {
            repo: Arc::clone(repo),
            settings,
            run_id,
            feeds: self.clone(),
            tx,
        };
        tokio::spawn(poll.run());
        rx
    }
}

/// The poll loop of one run's feed.
struct Poll {
    repo: Arc<dyn RunsRepository>,
    settings: WatchSettings,
    run_id: RunId,
    feeds: Feeds,
    tx: broadcast::Sender<Item>,
}

impl Poll {
    async fn run(self) {
        let last = match self.poll().await {
            Ok(last) => last,
            Err(error) => Some(Item::Failed(error)),
        };
        // Leaving and the last word happen under the lock: a watcher
        // subscribed before hears it, one after starts a new feed.
        let mut feeds = lock(&self.feeds.0);
        self.leave(&mut feeds);
        if let Some(item) = last {
            let _ = self.tx.send(item);
        }
    }

    fn leave(&self, feeds: &mut Senders) {
        if feeds
            .get(&self.run_id)
            .is_some_and(|feed| feed.same_channel(&self.tx))
        {
            feeds.remove(&self.run_id);
        }
    }

    /// Follows the run from its newest stored event until it ends or
    /// nobody watches; the ending made from its state, when it has one.
    async fn poll(&self) -> Result<Option<Item>, FeedError> {
        let storage = |error: crate::domain::ports::RepositoryError| {
            tracing::warn!(run_id = %self.run_id, error = %error, "failed to poll a watched run");
            FeedError::Storage(error.to_string())
        };
        let mut next = self
            .repo
            .last_run_event(self.run_id)
            .await
            .map_err(storage)?
            + 1;
        let mut waited_for_end = Duration::ZERO;
        loop {
            if self.nobody_watches() {
                return Ok(None);
            }
            let events = self
                .repo
                .run_events(self.run_id, next, PAGE)
                .await
                .map_err(storage)?;
            if !events.is_empty() {
                waited_for_end = Duration::ZERO;
                for envelope in events {
                    next = envelope.sequence + 1;
                    let last = envelope.event.is_last();
                    let _ = self.tx.send(Item::Event(Arc::new(envelope)));
                    if last {
                        return Ok(None);
                    }
                }
                continue;
            }
            let run = self
                .repo
                .find_run(self.run_id)
                .await
                .map_err(storage)?
                .ok_or(FeedError::Gone)?;
            if run.status != RunStatus::Running {
                // An interrupted run's replica stopped: no last event comes.
                if run.status == RunStatus::Interrupted || waited_for_end >= self.settings.end_grace
                {
                    return Ok(Some(Item::Event(Arc::new(Envelope {
                        run_id: self.run_id,
                        sequence: next,
                        event: RunEvent::ending(run),
                    }))));
                }
                waited_for_end += self.settings.poll_every;
            }
            tokio::time::sleep(self.settings.poll_every).await;
        }
    }

    /// True, and the feed gone from the map, when its last watcher left;
    /// decided under the lock, so no watcher joins a feed that is leaving.
    fn nobody_watches(&self) -> bool {
        let mut feeds = lock(&self.feeds.0);
        if self.tx.receiver_count() > 0 {
            return false;
        }
        self.leave(&mut feeds);
        true
    }
}
