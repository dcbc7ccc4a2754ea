//! The real SQL repository, counting the reads that follow a run's events
//! (`run_events`, `find_run`, `last_run_event`), per run.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use switchboard_runs_service::domain::{
    entities::{Agent, Message, Run, Thread},
    events::Envelope,
    history::HistoryLimits,
    ids::{AgentId, RunId, ThreadId},
    pins::{ChangeAnswer, ToolPin},
    ports::{Cursor, LeaseState, LiveRuns, RepositoryError, RunsRepository},
    usage::{UsageQuery, UsageRow},
};

type Result<T> = std::result::Result<T, RepositoryError>;

/// Counts the event reads of each run, and delegates everything.
pub struct Counting {
    inner: Arc<dyn RunsRepository>,
    reads: Arc<Mutex<HashMap<String, usize>>>,
}

/// The counts a [`Counting`] repository keeps, read by the test.
#[derive(Clone, Default)]
pub struct Reads(Arc<Mutex<HashMap<String, usize>>>);

impl Reads {
    /// Wraps `inner`, counting into these counts.
    pub fn wrap(&self, inner: Arc<dyn RunsRepository>) -> Arc<dyn RunsRepository> {
        Arc::new(Counting {
            inner,
            reads: self.0.clone(),
        })
    }

    /// Event reads of `run_id` so far.
    pub fn of(&self, run_id: &str) -> usize {
        self.0
            .lock()
            .expect("not poisoned")
            .get(run_id)
            .copied()
            .unwrap_or(0)
    }
}

impl Counting {
    fn count(&self, run_id: RunId) {
        *self
            .reads
            .lock()
            .expect("not poisoned")
            .entry(run_id.to_string())
            .or_insert(0) += 1;
    }
}

#[async_trait]
impl RunsRepository for Counting {
    async fn insert_agent(&self, agent: &Agent) -> Result<()> {
        self.inner.insert_agent(agent).await
    }
    async fn get_agent(&self, org: &str, id: AgentId) -> Result<Option<Agent>> {
        self.inner.get_agent(org, id).await
    }
    async fn list_agents(&self, org: &str, after: Cursor, limit: u32) -> Result<Vec<Agent>> {
        self.inner.list_agents(org, after, limit).await
    }
    async fn update_agent(&self, agent: &Agent) -> Result<bool> {
        self.inner.update_agent(agent).await
    }
    async fn delete_agent(&self, org: &str, id: AgentId) -> Result<bool> {
        self.inner.delete_agent(org, id).await
    }
    async fn insert_thread(&self, thread: &Thread) -> Result<()> {
        self.inner.insert_thread(thread).await
    }
    async fn get_thread(&self, org: &str, user: &str, id: ThreadId) -> Result<Option<Thread>> {
        self.inner.get_thread(org, user, id).await
    }
    async fn get_thread_with_agent(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<(Thread, Option<Agent>)>> {
        self.inner.get_thread_with_agent(org, user, id).await
    }
    async fn list_threads(
        &self,
        org: &str,
        user: &str,
        agent: Option<AgentId>,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Thread>> {
        self.inner
            .list_threads(org, user, agent, before, limit)
            .await
    }
    async fn delete_thread(&self, org: &str, user: &str, id: ThreadId) -> Result<bool> {
        self.inner.delete_thread(org, user, id).await
    }
    async fn pin_tools(&self, thread_id: ThreadId, offered: &[ToolPin]) -> Result<Vec<ToolPin>> {
        self.inner.pin_tools(thread_id, offered).await
    }
    async fn repin_tools(&self, thread_id: ThreadId, pins: &[ToolPin]) -> Result<()> {
        self.inner.repin_tools(thread_id, pins).await
    }
    async fn keep_tool_changes(&self, thread_id: ThreadId, changed: &[ToolPin]) -> Result<()> {
        self.inner.keep_tool_changes(thread_id, changed).await
    }
    async fn accept_tool_change(
        &self,
        thread_id: ThreadId,
        name: &str,
        digest: &str,
    ) -> Result<ChangeAnswer> {
        self.inner.accept_tool_change(thread_id, name, digest).await
    }
    async fn append_messages(&self, thread_id: ThreadId, messages: &[Message]) -> Result<Vec<i64>> {
        self.inner.append_messages(thread_id, messages).await
    }
    async fn list_messages(
        &self,
        thread_id: ThreadId,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Message>> {
        self.inner.list_messages(thread_id, after_seq, limit).await
    }
    async fn recent_messages(
        &self,
        thread_id: ThreadId,
        limits: HistoryLimits,
    ) -> Result<Vec<Message>> {
        self.inner.recent_messages(thread_id, limits).await
    }
    async fn start_run_with(&self, run: &Run, input: &[Message]) -> Result<Vec<i64>> {
        self.inner.start_run_with(run, input).await
    }
    async fn update_run_with(&self, run: &Run, messages: &[Message]) -> Result<Vec<i64>> {
        self.inner.update_run_with(run, messages).await
    }
    async fn resume_run(&self, run_id: RunId, now: i64) -> Result<bool> {
        self.inner.resume_run(run_id, now).await
    }
    async fn resume_run_with(&self, run: &Run, messages: &[Message]) -> Result<Option<Vec<i64>>> {
        self.inner.resume_run_with(run, messages).await
    }
    async fn get_run(&self, thread_id: ThreadId, id: RunId) -> Result<Option<Run>> {
        self.inner.get_run(thread_id, id).await
    }
    async fn find_run(&self, id: RunId) -> Result<Option<Run>> {
        self.count(id);
        self.inner.find_run(id).await
    }
    async fn heartbeat(&self, run_ids: &[RunId]) -> Result<Vec<(RunId, LeaseState)>> {
        self.inner.heartbeat(run_ids).await
    }
    async fn interrupt_expired_runs(&self) -> Result<u64> {
        self.inner.interrupt_expired_runs().await
    }
    async fn interrupt_previous_process_runs(&self) -> Result<u64> {
        self.inner.interrupt_previous_process_runs().await
    }
    async fn list_runs(&self, thread_id: ThreadId, before: Cursor, limit: u32) -> Result<Vec<Run>> {
        self.inner.list_runs(thread_id, before, limit).await
    }
    async fn request_cancel(&self, run_id: RunId, reason: &str) -> Result<Option<Run>> {
        self.inner.request_cancel(run_id, reason).await
    }
    async fn append_run_events(&self, events: &[Envelope]) -> Result<()> {
        self.inner.append_run_events(events).await
    }
    async fn run_events(&self, run_id: RunId, from: i64, limit: u32) -> Result<Vec<Envelope>> {
        self.count(run_id);
        self.inner.run_events(run_id, from, limit).await
    }
    async fn last_run_event(&self, run_id: RunId) -> Result<i64> {
        self.count(run_id);
        self.inner.last_run_event(run_id).await
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Vec<UsageRow>> {
        self.inner.usage(query).await
    }
    async fn live_runs(&self, org: &str, user: &str) -> Result<LiveRuns> {
        self.inner.live_runs(org, user).await
    }
}
