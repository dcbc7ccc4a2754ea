//! The storage port: agents, threads, messages and runs.

use async_trait::async_trait;

use crate::domain::{
    entities::{Agent, Message, Run, Thread},
    events::Envelope,
    history::HistoryLimits,
    ids::{AgentId, RunId, ThreadId},
    pins::{ChangeAnswer, ToolPin},
    usage::{UsageQuery, UsageRow},
};

/// What a heartbeat found of a run this process executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// Still this process's: lease renewed (or the run ended by this
    /// process's own write, its task finishing).
    Held,
    /// Still this process's, and `CancelRun` asked for its end.
    CancelRequested,
    /// No longer this process's to write: another process ended it
    /// (interrupted after its lease expired, cancelled) or owns it, or it is
    /// gone.
    Lost,
}

/// Why storage failed.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// The thread already has an active (running or paused) run.
    #[error("the thread already has an active run")]
    ThreadBusy,
    /// The run is no longer in the state its writer expected: it ended
    /// elsewhere (interrupted by a replica that saw it stale, cancelled) or
    /// does not exist. Its writer stops writing it.
    #[error("the run was ended elsewhere (interrupted or cancelled)")]
    RunEnded,
    /// Anything else.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Where a page of a list resumes: the `(created_at, id)` of the last row.
pub type Cursor = Option<(i64, String)>;

/// Durable storage of agents, threads, messages and runs. Every read is
/// scoped: agents by organization, threads by organization and user.
#[async_trait]
pub trait RunsRepository: Send + Sync + 'static {
    /// Stores a new agent.
    async fn insert_agent(&self, agent: &Agent) -> Result<(), RepositoryError>;
    /// The agent `id` of `org`.
    async fn get_agent(&self, org: &str, id: AgentId) -> Result<Option<Agent>, RepositoryError>;
    /// A page of `org`'s agents, oldest first.
    async fn list_agents(
        &self,
        org: &str,
        after: Cursor,
        limit: u32,
    ) -> Result<Vec<Agent>, RepositoryError>;
    /// Replaces an agent; false when it does not exist in its organization.
    async fn update_agent(&self, agent: &Agent) -> Result<bool, RepositoryError>;
    /// Deletes an agent; false when it does not exist.
    async fn delete_agent(&self, org: &str, id: AgentId) -> Result<bool, RepositoryError>;

    /// Stores a new thread.
    async fn insert_thread(&self, thread: &Thread) -> Result<(), RepositoryError>;
    /// The thread `id` of `user` in `org`.
    async fn get_thread(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<Thread>, RepositoryError>;
    /// The thread `id` of `user` in `org` with its agent (`None` when the
    /// agent was deleted), in one read.
    async fn get_thread_with_agent(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<(Thread, Option<Agent>)>, RepositoryError>;
    /// A page of `user`'s threads in `org`, newest first, optionally of one agent.
    async fn list_threads(
        &self,
        org: &str,
        user: &str,
        agent: Option<AgentId>,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Thread>, RepositoryError>;
    /// Deletes a thread with its messages and runs; false when it does not exist.
    async fn delete_thread(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<bool, RepositoryError>;

    /// Appends messages to `thread_id` in one write, numbered in order after
    /// its last one; their stored `seq`s are returned, in order.
    async fn append_messages(
        &self,
        thread_id: ThreadId,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError>;
    /// Appends one message to its thread; its stored `seq` is returned.
    async fn append_message(&self, message: &Message) -> Result<i64, RepositoryError> {
        let seqs = self
            .append_messages(message.thread_id, std::slice::from_ref(message))
            .await?;
        seqs.first()
            .copied()
            .ok_or_else(|| anyhow::anyhow!("failed to append a message: nothing was stored").into())
    }
    /// Messages of a thread with `seq` greater than `after_seq`, in order.
    async fn list_messages(
        &self,
        thread_id: ThreadId,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Message>, RepositoryError>;

    /// The newest messages of a thread, oldest first: at most
    /// `limits.max_messages`, and only as many as fit in `limits.max_bytes`
    /// (the newest always does). Reading stops there, so a long thread is
    /// never read whole.
    async fn recent_messages(
        &self,
        thread_id: ThreadId,
        limits: HistoryLimits,
    ) -> Result<Vec<Message>, RepositoryError>;

    /// Stores a new run with the messages it starts from, in one
    /// transaction; their `seq`s are returned. [`RepositoryError::ThreadBusy`]
    /// when its thread already has a running or paused run.
    async fn start_run_with(
        &self,
        run: &Run,
        input: &[Message],
    ) -> Result<Vec<i64>, RepositoryError>;
    /// Stores a new run; see [`RunsRepository::start_run_with`].
    async fn start_run(&self, run: &Run) -> Result<(), RepositoryError> {
        self.start_run_with(run, &[]).await.map(drop)
    }
    /// Appends `messages` to the run's thread and saves the run's state, in
    /// one transaction; their `seq`s are returned.
    async fn update_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError>;
    /// Saves a run's state.
    async fn update_run(&self, run: &Run) -> Result<(), RepositoryError> {
        self.update_run_with(run, &[]).await.map(drop)
    }
    /// Moves a paused run back to running; false when it was not paused.
    async fn resume_run(&self, run_id: RunId, now: i64) -> Result<bool, RepositoryError>;
    /// Saves a paused run as `run` (running again) with `messages` (the
    /// client's results) appended, in one transaction; `None`, and nothing
    /// written, when it was no longer paused.
    async fn resume_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Option<Vec<i64>>, RepositoryError>;
    /// The run `id` of `thread_id`.
    async fn get_run(&self, thread_id: ThreadId, id: RunId)
    -> Result<Option<Run>, RepositoryError>;
    /// The run `id`, whatever its thread (the caller checks the thread).
    async fn find_run(&self, id: RunId) -> Result<Option<Run>, RepositoryError>;
    /// Renews the leases of this process's running runs, on the database's
    /// clock, and says for each id what it found.
    async fn heartbeat(
        &self,
        run_ids: &[RunId],
    ) -> Result<Vec<(RunId, LeaseState)>, RepositoryError>;
    /// Marks running runs whose lease expired (on the database's clock) as
    /// interrupted; returns how many.
    async fn interrupt_expired_runs(&self) -> Result<u64, RepositoryError>;
    /// Marks the running runs of this replica's previous process (same
    /// replica name, another process) as interrupted; returns how many.
    /// Nothing when the replica has no name.
    async fn interrupt_previous_process_runs(&self) -> Result<u64, RepositoryError>;
    /// A page of a thread's runs, newest first.
    async fn list_runs(
        &self,
        thread_id: ThreadId,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Run>, RepositoryError>;
    /// Asks for a run's end: a paused run, or a running one whose lease
    /// expired, is cancelled at once with `reason`; a running one is flagged
    /// for its owner's next heartbeat. The run as stored after.
    async fn request_cancel(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> Result<Option<Run>, RepositoryError>;
    /// Stores events of runs, in one write (a repeat of a stored sequence
    /// is ignored).
    async fn append_run_events(&self, events: &[Envelope]) -> Result<(), RepositoryError>;
    /// A run's stored events with `sequence >= from`, in order, at most `limit`.
    async fn run_events(
        &self,
        run_id: RunId,
        from: i64,
        limit: u32,
    ) -> Result<Vec<Envelope>, RepositoryError>;
    /// The sequence of a run's last stored event; 0 when none is.
    async fn last_run_event(&self, run_id: RunId) -> Result<i64, RepositoryError>;
    /// Pins each tool of `offered` whose name the thread has no pin of
    /// yet, and returns the thread's pin of every name in `offered`: the
    /// one just stored, or the one stored before (which may differ). A
    /// thread's pins go with it.
    async fn pin_tools(
        &self,
        thread_id: ThreadId,
        offered: &[ToolPin],
    ) -> Result<Vec<ToolPin>, RepositoryError>;
    /// Replaces the thread's pins of the names in `pins` with them (a
    /// change the agent accepts), pinning any it has none of; a change of
    /// those names kept for an answer is dropped.
    async fn repin_tools(
        &self,
        thread_id: ThreadId,
        pins: &[ToolPin],
    ) -> Result<(), RepositoryError>;
    /// Keeps each definition of `changed` as the thread's change of its
    /// name waiting for the application's answer, in place of any kept
    /// before (the latest listing is what the application is shown).
    async fn keep_tool_changes(
        &self,
        thread_id: ThreadId,
        changed: &[ToolPin],
    ) -> Result<(), RepositoryError>;
    /// Pins the thread's waiting change of `name` if its digest is
    /// `digest`, and drops it; otherwise changes nothing and says why.
    /// One transaction: a change kept meanwhile is either answered or
    /// reported as differing, never half applied.
    async fn accept_tool_change(
        &self,
        thread_id: ThreadId,
        name: &str,
        digest: &str,
    ) -> Result<ChangeAnswer, RepositoryError>;
    /// The usage of `query`'s organization, one row per day (then agent and
    /// user, as grouped), days ascending. Usage is added by the run writes
    /// above: a run's tokens as its totals grow, a tool call with its
    /// result message, a run when it is inserted; a thread's deletion keeps
    /// it.
    async fn usage(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, RepositoryError>;
    /// The runs running now, on every replica, of organization `org` and of
    /// its user `user` (a run whose lease lapsed is not counted).
    async fn live_runs(&self, org: &str, user: &str) -> Result<LiveRuns, RepositoryError>;
}

/// Runs running now, of an organization and of one of its users.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveRuns {
    /// The organization's.
    pub org: u64,
    /// The user's.
    pub user: u64,
}
