//! What the in-memory repository holds, and the rules of its writes shared
//! by several of its methods.

use crate::domain::{
    entities::{Agent, Message, Run, Thread},
    events::Envelope,
    ids::{RunId, ThreadId},
    ports::RepositoryError,
};

use super::{super::usage::Ledger, pins::Pins};

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) agents: Vec<Agent>,
    pub(super) threads: Vec<Thread>,
    pub(super) messages: Vec<Message>,
    pub(super) runs: Vec<Run>,
    /// Runs `CancelRun` asked to end.
    pub(super) cancel_requested: Vec<RunId>,
    pub(super) events: Vec<Envelope>,
    pub(super) usage: Ledger,
    pub(super) pins: Pins,
}

impl State {
    /// As in SQL: a message needs its thread (a foreign key), and storing
    /// one marks its thread active (a trigger).
    pub(super) fn append(
        &mut self,
        thread_id: ThreadId,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        let Some(thread) = self.threads.iter_mut().find(|t| t.id == thread_id) else {
            return Err(anyhow::anyhow!(
                "failed to append messages: thread {thread_id} does not exist"
            )
            .into());
        };
        if let Some(last) = messages.last() {
            thread.updated_at = last.created_at;
        }
        let last = self
            .messages
            .iter()
            .filter(|m| m.thread_id == thread_id)
            .map(|m| m.seq)
            .max()
            .unwrap_or(0);
        Ok((1i64..)
            .zip(messages)
            .map(|(offset, message)| {
                let mut stored = message.clone();
                stored.seq = last + offset;
                self.messages.push(stored);
                last + offset
            })
            .collect())
    }

    /// Stores `run` and adds what it and `messages` used to the ledger,
    /// as the SQL write does.
    pub(super) fn save_run(&mut self, run: &Run, messages: &[Message]) {
        let Some(stored) = self.runs.iter_mut().find(|r| r.id == run.id) else {
            return;
        };
        let before = (stored.usage.input_tokens, stored.usage.output_tokens);
        *stored = run.clone();
        self.record_usage(run, before, messages, false);
    }

    pub(super) fn record_usage(
        &mut self,
        run: &Run,
        before: (i64, i64),
        messages: &[Message],
        started: bool,
    ) {
        if let Some(thread) = self.threads.iter().find(|t| t.id == run.thread_id) {
            self.usage.add(thread, run, before, messages, started);
        }
    }
}
