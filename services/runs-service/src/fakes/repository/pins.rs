//! The tools each thread pinned, in memory, with the SQL rules: a pin
//! needs its thread (a foreign key), a name is pinned once per thread
//! until it is pinned again, and a thread's pins go with it.

use std::collections::BTreeMap;

use crate::domain::{entities::Thread, ids::ThreadId, pins::ToolPin, ports::RepositoryError};

/// Every thread's pins, by name.
#[derive(Debug, Default)]
pub(super) struct Pins {
    by_thread: BTreeMap<ThreadId, BTreeMap<String, ToolPin>>,
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
        }
        Ok(())
    }

    /// Drops a deleted thread's pins.
    pub(super) fn forget(&mut self, thread_id: ThreadId) {
        self.by_thread.remove(&thread_id);
    }
}
