//! What tests read of, and do to, the in-memory repository besides the
//! port: the messages stored, a run ended as another replica would.

use super::MemoryRepository;
use crate::domain::{
    entities::{Message, Run, RunStatus},
    ids::{RunId, ThreadId},
};

impl MemoryRepository {
    /// Every message of `thread_id`, in order.
    pub fn messages(&self, thread_id: ThreadId) -> Vec<Message> {
        self.with(|s| {
            s.messages
                .iter()
                .filter(|m| m.thread_id == thread_id)
                .cloned()
                .collect()
        })
    }

    /// Ends the stored run `id` as another replica would (its reaper, say).
    pub fn end_elsewhere(&self, id: RunId, status: RunStatus) {
        self.with(|s| {
            if let Some(run) = s.runs.iter_mut().find(|r| r.id == id) {
                run.status = status;
                run.error = Some("the process running it stopped".into());
            }
        });
    }

    /// The stored run `id`.
    pub fn run(&self, id: RunId) -> Option<Run> {
        self.with(|s| s.runs.iter().find(|r| r.id == id).cloned())
    }
}
