//! The tools each thread pinned, in memory, with the SQL rules: a pin
//! needs its thread (a foreign key), a name is pinned once per thread
//! until it is pinned again, and a thread's pins go with it.

use std::collections::BTreeMap;

use crate::domain::{
    entities::Thread,
    ids::ThreadId,
    pins::{ChangeAnswer, ToolPin},
    ports::RepositoryError,
};

/// Every thread's pins, by name.
#[derive(Debug, Default)]
pub(super) struct Pins {
    by_thread: BTreeMap<ThreadId, BTreeMap<String, ToolPin>>,
    /// Changes kept for an answer, by thread and name.
    changes: BTreeMap<ThreadId, BTreeMap<String, ToolPin>>,
}

fn exists(threads: &[Thread], thread_id: ThreadId) -> Result<(), RepositoryError> {
    if threads.iter().any(|t| t.id == thread_id) {
        Ok(())
    } else {
        Err(anyhow::anyhow!("failed to pin tools: thread {thread_id} does not exist").into())
    }
}

impl Pins {
    /// See `RunsRepository::pin_tools`.
    pub(super) fn pin(
        &mut self,
        threads: &[Thread],
        thread_id: ThreadId,
        offered: &[ToolPin],
    ) -> Result<Vec<ToolPin>, RepositoryError> {
        if offered.is_empty() {
            return Ok(Vec::new());
        }
        exists(threads, thread_id)?;
        let pinned = self.by_thread.entry(thread_id).or_default();
        Ok(offered
            .iter()
            .map(|pin| {
                pinned
                    .entry(pin.name.clone())
                    .or_insert_with(|| pin.clone())
                    .clone()
            })
            .collect())
    }

    /// See `RunsRepository::repin_tools`.
    pub(super) fn repin(
        &mut self,
        threads: &[Thread],
        thread_id: ThreadId,
        pins: &[ToolPin],
    ) -> Result<(), RepositoryError> {
        if pins.is_empty() {
            return Ok(());
        }
        exists(threads, thread_id)?;
        let pinned = self.by_thread.entry(thread_id).or_default();
        for pin in pins {
            pinned.insert(pin.name.clone(), pin.clone());
            if let Some(waiting) = self.changes.get_mut(&thread_id) {
                waiting.remove(&pin.name);
            }
        }
        Ok(())
    }

    /// See `RunsRepository::keep_tool_changes`.
    pub(super) fn keep_changes(
        &mut self,
        threads: &[Thread],
        thread_id: ThreadId,
        changed: &[ToolPin],
    ) -> Result<(), RepositoryError> {
        if changed.is_empty() {
            return Ok(());
        }
        exists(threads, thread_id)?;
        let waiting = self.changes.entry(thread_id).or_default();
        for pin in changed {
            waiting.insert(pin.name.clone(), pin.clone());
        }
        Ok(())
    }

    /// See `RunsRepository::accept_tool_change`.
    pub(super) fn accept_change(
        &mut self,
        thread_id: ThreadId,
        name: &str,
        digest: &str,
    ) -> ChangeAnswer {
        let Some(waiting) = self.changes.get_mut(&thread_id) else {
            return ChangeAnswer::NoneWaiting;
        };
        let Some(change) = waiting.get(name) else {
            return ChangeAnswer::NoneWaiting;
        };
        if change.digest != digest {
            return ChangeAnswer::Differs {
                waiting: change.digest.clone(),
            };
        }
        let Some(mut pin) = waiting.remove(name) else {
            return ChangeAnswer::NoneWaiting;
        };
        pin.pinned_at = switchboard_db::now_millis();
        if let Some(stored) = self
            .by_thread
            .get_mut(&thread_id)
            .and_then(|pinned| pinned.get_mut(name))
        {
            *stored = pin.clone();
        }
        ChangeAnswer::Pinned(pin)
    }

    /// Drops a deleted thread's pins.
    pub(super) fn forget(&mut self, thread_id: ThreadId) {
        self.by_thread.remove(&thread_id);
        self.changes.remove(&thread_id);
    }
}
