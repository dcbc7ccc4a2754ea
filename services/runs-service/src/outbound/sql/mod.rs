//! Agents, threads, messages and runs in SQL (SQLite or PostgreSQL through
//! `sqlx::Any`).
//!
//! Ids are text, timestamps Unix milliseconds, and structured values (agent
//! settings, message parts, tool bindings, pending calls) JSON text, so one
//! set of statements serves both databases. One file per aggregate: agents,
//! threads, messages and runs.

use anyhow::Context as _;
use async_trait::async_trait;
use std::str::FromStr;

use sqlx::{AnyPool, Row as _, any::AnyRow};

use crate::domain::{
    entities::{Agent, Message, Run, Thread},
    events::Envelope,
    history::HistoryLimits,
    ids::{AgentId, RunId, ThreadId},
    pins::{ChangeAnswer, ToolPin},
    ports::{Cursor, LeaseState, LiveRuns, RepositoryError, RunsRepository},
    usage::{UsageQuery, UsageRow},
};

mod agents;
mod leases;
mod messages;
mod pins;
mod run_events;
mod runs;
mod takeovers;
mod threads;
mod usage;

pub use leases::{DEFAULT_MAX_TAKEOVERS, Replica};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// runs-service's schema, per database.
pub const MIGRATIONS: switchboard_db::Migrations = switchboard_db::Migrations {
    sqlite: &SQLITE_MIGRATIONS,
    postgres: &POSTGRES_MIGRATIONS,
};

/// Times an append is tried when racing appends to one thread take its number.
const APPEND_ATTEMPTS: u32 = 16;

const AGENT_COLUMNS: &str = "id, org_id, name, config_json, created_at, updated_at";
const THREAD_COLUMNS: &str = "id, org_id, user_id, agent_id, title, created_at, updated_at";
const MESSAGE_COLUMNS: &str = "id, thread_id, run_id, seq, role, content_json, created_at";
const RUN_COLUMNS: &str = "id, thread_id, agent_id, status, steps, input_tokens, output_tokens, \
     error, tool_bindings_json, pending_json, created_at, updated_at";

/// [`RunsRepository`] over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlRunsRepository {
    pool: AnyPool,
    postgres: bool,
    replica: Replica,
}

impl SqlRunsRepository {
    /// A repository over `pool`, whose schema [`MIGRATIONS`] created, for a
    /// nameless replica process with 30-second leases.
    pub fn new(pool: AnyPool) -> Self {
        let postgres = pool
            .connect_options()
            .database_url
            .scheme()
            .starts_with("postgres");
        Self {
            pool,
            postgres,
            replica: Replica::new(None, std::time::Duration::from_secs(30)),
        }
    }

    /// The same repository, writing runs for `replica`.
    #[must_use]
    pub fn with_replica(self, replica: Replica) -> Self {
        Self { replica, ..self }
    }

    /// The replica process it writes runs for.
    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// A transaction that writes. On SQLite it takes the database's one
    /// write lock as it begins (`BEGIN IMMEDIATE`): a transaction that reads
    /// before it writes would otherwise fail at once ("database is locked")
    /// when another writer committed after its read, instead of waiting its
    /// turn within the busy timeout. PostgreSQL locks rows as it goes.
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        if self.postgres {
            self.pool.begin().await
        } else {
            self.pool.begin_with("BEGIN IMMEDIATE").await
        }
    }

    /// The database's clock in Unix milliseconds, as SQL: leases are
    /// compared with it, never with a replica's clock.
    fn db_now(&self) -> &'static str {
        if self.postgres {
            "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
        } else {
            "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
        }
    }
}

/// Wraps a database error with what was being done, so that no `sqlx` type
/// reaches the domain.
fn failed(what: &'static str) -> impl FnOnce(sqlx::Error) -> RepositoryError {
    move |error| RepositoryError::Other(anyhow::Error::new(error).context(what))
}

/// Like [`failed`], but the one-active-run-per-thread index turns into
/// [`RepositoryError::ThreadBusy`]: it is the only unique constraint a run
/// write can break (run ids are fresh UUIDs).
fn run_write_failed(what: &'static str) -> impl FnOnce(sqlx::Error) -> RepositoryError {
    move |error| match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => RepositoryError::ThreadBusy,
        _ => RepositoryError::Other(anyhow::Error::new(error).context(what)),
    }
}

/// Reads an id column: ids are stored as text and read back as their type.
pub(crate) fn stored_id<T: FromStr<Err = uuid::Error>>(
    row: &AnyRow,
    column: &str,
) -> anyhow::Result<T> {
    let text: String = row.try_get(column)?;
    text.parse()
        .with_context(|| format!("stored {column} {text:?} is not a UUID"))
}

/// Reads an id column that may be NULL; see [`stored_id`].
pub(crate) fn stored_optional_id<T: FromStr<Err = uuid::Error>>(
    row: &AnyRow,
    column: &str,
) -> anyhow::Result<Option<T>> {
    let text: Option<String> = row.try_get(column)?;
    text.map(|text| {
        text.parse()
            .with_context(|| format!("stored {column} {text:?} is not a UUID"))
    })
    .transpose()
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T, what: &'static str) -> anyhow::Result<String> {
    serde_json::to_string(value).context(what)
}

#[async_trait]
impl RunsRepository for SqlRunsRepository {
    async fn insert_agent(&self, agent: &Agent) -> Result<(), RepositoryError> {
        agents::insert_agent(self, agent).await
    }

    async fn get_agent(&self, org: &str, id: AgentId) -> Result<Option<Agent>, RepositoryError> {
        agents::get_agent(self, org, id).await
    }

    async fn list_agents(
        &self,
        org: &str,
        after: Cursor,
        limit: u32,
    ) -> Result<Vec<Agent>, RepositoryError> {
        agents::list_agents(self, org, after, limit).await
    }

    async fn update_agent(&self, agent: &Agent) -> Result<bool, RepositoryError> {
        agents::update_agent(self, agent).await
    }

    async fn delete_agent(&self, org: &str, id: AgentId) -> Result<bool, RepositoryError> {
        agents::delete_agent(self, org, id).await
    }

    async fn insert_thread(&self, thread: &Thread) -> Result<(), RepositoryError> {
        threads::insert_thread(self, thread).await
    }

    async fn get_thread(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<Thread>, RepositoryError> {
        threads::get_thread(self, org, user, id).await
    }

    async fn get_thread_with_agent(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<(Thread, Option<Agent>)>, RepositoryError> {
        threads::get_thread_with_agent(self, org, user, id).await
    }

    async fn list_threads(
        &self,
        org: &str,
        user: &str,
        agent: Option<AgentId>,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Thread>, RepositoryError> {
        threads::list_threads(self, org, user, agent, before, limit).await
    }

    async fn delete_thread(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<bool, RepositoryError> {
        threads::delete_thread(self, org, user, id).await
    }

    async fn append_messages(
        &self,
        thread_id: ThreadId,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        messages::append_messages(self, thread_id, messages).await
    }

    async fn list_messages(
        &self,
        thread_id: ThreadId,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Message>, RepositoryError> {
        messages::list_messages(self, thread_id, after_seq, limit).await
    }

    async fn recent_messages(
        &self,
        thread_id: ThreadId,
        limits: HistoryLimits,
    ) -> Result<Vec<Message>, RepositoryError> {
        messages::recent_messages(self, thread_id, limits).await
    }

    async fn start_run_with(
        &self,
        run: &Run,
        input: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        runs::start_run_with(self, run, input).await
    }

    async fn update_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        runs::update_run_with(self, run, messages).await
    }

    async fn resume_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Option<Vec<i64>>, RepositoryError> {
        runs::resume_run_with(self, run, messages).await
    }

    async fn resume_run(&self, run_id: RunId, now: i64) -> Result<bool, RepositoryError> {
        runs::resume_run(self, run_id, now).await
    }

    async fn get_run(
        &self,
        thread_id: ThreadId,
        id: RunId,
    ) -> Result<Option<Run>, RepositoryError> {
        runs::get_run(self, thread_id, id).await
    }

    async fn find_run(&self, id: RunId) -> Result<Option<Run>, RepositoryError> {
        runs::find_run(self, id).await
    }

    async fn heartbeat(
        &self,
        run_ids: &[RunId],
    ) -> Result<Vec<(RunId, LeaseState)>, RepositoryError> {
        leases::heartbeat(self, run_ids).await
    }

    async fn interrupt_expired_runs(&self) -> Result<u64, RepositoryError> {
        leases::interrupt_expired_runs(self, None).await
    }

    async fn interrupt_previous_process_runs(&self) -> Result<u64, RepositoryError> {
        leases::interrupt_previous_process_runs(self).await
    }

    async fn list_runs(
        &self,
        thread_id: ThreadId,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Run>, RepositoryError> {
        leases::list_runs(self, thread_id, before, limit).await
    }

    async fn request_cancel(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> Result<Option<Run>, RepositoryError> {
        leases::request_cancel(self, run_id, reason).await
    }

    async fn append_run_events(&self, events: &[Envelope]) -> Result<(), RepositoryError> {
        run_events::append_run_events(self, events).await
    }

    async fn run_events(
        &self,
        run_id: RunId,
        from: i64,
        limit: u32,
    ) -> Result<Vec<Envelope>, RepositoryError> {
        run_events::run_events(self, run_id, from, limit).await
    }

    async fn last_run_event(&self, run_id: RunId) -> Result<i64, RepositoryError> {
        run_events::last_run_event(self, run_id).await
    }

    async fn pin_tools(
        &self,
        thread_id: ThreadId,
        offered: &[ToolPin],
    ) -> Result<Vec<ToolPin>, RepositoryError> {
        pins::pin_tools(self, thread_id, offered).await
    }

    async fn repin_tools(
        &self,
        thread_id: ThreadId,
        pins: &[ToolPin],
    ) -> Result<(), RepositoryError> {
        pins::repin_tools(self, thread_id, pins).await
    }

    async fn keep_tool_changes(
        &self,
        thread_id: ThreadId,
        changed: &[ToolPin],
    ) -> Result<(), RepositoryError> {
        pins::keep_tool_changes(self, thread_id, changed).await
    }

    async fn accept_tool_change(
        &self,
        thread_id: ThreadId,
        name: &str,
        digest: &str,
    ) -> Result<ChangeAnswer, RepositoryError> {
        pins::accept_tool_change(self, thread_id, name, digest).await
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, RepositoryError> {
        usage::usage(self, query).await
    }

    async fn live_runs(&self, org: &str, user: &str) -> Result<LiveRuns, RepositoryError> {
        leases::live_runs(self, org, user).await
    }
}
