//! Agents, threads, messages and runs in SQL (SQLite or PostgreSQL through
//! `sqlx::Any`).
//!
//! Ids are text, timestamps Unix milliseconds, and structured values (agent
//! settings, message parts, tool bindings, pending calls) JSON text, so one
//! set of statements serves both databases.

use std::collections::HashMap;

use anyhow::Context as _;
use async_trait::async_trait;
use futures::TryStreamExt as _;
use sqlx::{AnyConnection, AnyPool, Row, any::AnyRow};

use crate::domain::{
    entities::{Agent, Message, PendingCall, Role, Run, RunStatus, Thread, ToolBinding, Usage},
    ports::{Cursor, RepositoryError, RunsRepository},
    run::{HistoryLimits, WindowMeter},
};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// runs-service's schema, per database.
pub const MIGRATIONS: switchboard_db::Migrations = switchboard_db::Migrations {
    sqlite: &SQLITE_MIGRATIONS,
    postgres: &POSTGRES_MIGRATIONS,
};

/// The error a run records when its process stopped renewing its heartbeat.
const INTERRUPTED_ERROR: &str = "the process running it stopped";

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
}

impl SqlRunsRepository {
    /// A repository over `pool`, whose schema [`MIGRATIONS`] created.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
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

fn to_json<T: serde::Serialize + ?Sized>(value: &T, what: &'static str) -> anyhow::Result<String> {
    serde_json::to_string(value).context(what)
}

fn decode_agent(row: &AnyRow) -> anyhow::Result<Agent> {
    let config_json: String = row.try_get("config_json")?;
    Ok(Agent {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        name: row.try_get("name")?,
        config: serde_json::from_str(&config_json)
            .context("stored agent configuration is not valid")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn decode_thread(row: &AnyRow) -> anyhow::Result<Thread> {
    Ok(Thread {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        user_id: row.try_get("user_id")?,
        agent_id: row.try_get("agent_id")?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn decode_message(row: &AnyRow) -> anyhow::Result<Message> {
    let role: String = row.try_get("role")?;
    let content_json: String = row.try_get("content_json")?;
    Ok(Message {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        run_id: row.try_get("run_id")?,
        seq: row.try_get("seq")?,
        role: Role::parse(&role)
            .with_context(|| format!("stored message role {role:?} is not valid"))?,
        parts: serde_json::from_str(&content_json)
            .context("stored message content is not valid")?,
        created_at: row.try_get("created_at")?,
    })
}

fn decode_run(row: &AnyRow) -> anyhow::Result<Run> {
    let status: String = row.try_get("status")?;
    let bindings_json: String = row.try_get("tool_bindings_json")?;
    let pending_json: Option<String> = row.try_get("pending_json")?;
    let bindings: Vec<ToolBinding> =
        serde_json::from_str(&bindings_json).context("stored run tool bindings are not valid")?;
    let pending: Vec<PendingCall> = match pending_json {
        Some(json) => {
            serde_json::from_str(&json).context("stored run pending calls are not valid")?
        }
        None => Vec::new(),
    };
    Ok(Run {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        agent_id: row.try_get("agent_id")?,
        status: RunStatus::parse(&status)
            .with_context(|| format!("stored run status {status:?} is not valid"))?,
        steps: row.try_get("steps")?,
        usage: Usage {
            input_tokens: row.try_get("input_tokens")?,
            output_tokens: row.try_get("output_tokens")?,
        },
        error: row.try_get("error")?,
        bindings,
        pending,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// Pending calls are stored only while a run waits for them; NULL otherwise.
fn pending_json(run: &Run) -> anyhow::Result<Option<String>> {
    if run.pending.is_empty() {
        return Ok(None);
    }
    to_json(&run.pending, "failed to encode a run's pending calls").map(Some)
}

/// How a run is written.
#[derive(Debug, Clone, Copy)]
enum RunWrite {
    /// A new run.
    Insert,
    /// A new state of a stored run.
    Update,
}

impl RunWrite {
    fn what(self) -> &'static str {
        match self {
            Self::Insert => "failed to start a run",
            Self::Update => "failed to update a run",
        }
    }

    async fn on(self, conn: &mut AnyConnection, run: &Run) -> Result<(), RepositoryError> {
        match self {
            Self::Insert => insert_run(conn, run).await,
            Self::Update => update_run_row(conn, run).await,
        }
    }
}

impl SqlRunsRepository {
    /// Writes `run` and appends `messages` to its thread, in one transaction
    /// when there are messages; their `seq`s are returned.
    async fn write_run(
        &self,
        run: &Run,
        write: RunWrite,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        if messages.is_empty() {
            let mut conn = self.pool.acquire().await.map_err(failed(write.what()))?;
            write.on(&mut conn, run).await?;
            return Ok(Vec::new());
        }
        let append = Append::new(&run.thread_id, messages)?;
        for _ in 0..APPEND_ATTEMPTS {
            let mut tx = self.pool.begin().await.map_err(failed(write.what()))?;
            write.on(&mut tx, run).await?;
            if let Some(seqs) = append.on(&mut tx).await? {
                tx.commit().await.map_err(run_write_failed(write.what()))?;
                return Ok(seqs);
            }
        }
        Err(append.gave_up())
    }
}

/// Messages to append to one thread in one statement: the statement numbers
/// them after the thread's last one and stores them, and a trigger marks the
/// thread active. Two appends racing on one thread can pick the same
/// numbers: the loser breaks UNIQUE (thread_id, seq) and numbers again.
struct Append<'a> {
    thread_id: &'a str,
    messages: &'a [Message],
    contents: Vec<String>,
    sql: String,
}

impl<'a> Append<'a> {
    fn new(thread_id: &'a str, messages: &'a [Message]) -> anyhow::Result<Self> {
        let contents = messages
            .iter()
            .map(|m| to_json(&m.parts, "failed to encode a message's parts"))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let rows = (0..messages.len())
            .map(|i| {
                let p = 2 + i * 5;
                format!(
                    "SELECT ${p} AS id, ${} AS run_id, ${} AS role, ${} AS content_json, \
                     CAST(${} AS BIGINT) AS created_at, {} AS k",
                    p + 1,
                    p + 2,
                    p + 3,
                    p + 4,
                    i + 1
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let sql = format!(
            "INSERT INTO messages ({MESSAGE_COLUMNS}) \
             SELECT m.id, $1, m.run_id, b.n + m.k, m.role, m.content_json, m.created_at \
             FROM (SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE thread_id = $1) AS b, \
             ({rows}) AS m \
             RETURNING id, seq"
        );
        Ok(Self {
            thread_id,
            messages,
            contents,
            sql,
        })
    }

    /// The stored `seq`s in order, or `None` when a racing append took the
    /// numbers (in a transaction, which is then to be rolled back).
    async fn on(&self, conn: &mut AnyConnection) -> Result<Option<Vec<i64>>, RepositoryError> {
        let mut query = sqlx::query(&self.sql).bind(self.thread_id);
        for (message, content) in self.messages.iter().zip(&self.contents) {
            query = query
                .bind(message.id.as_str())
                .bind(message.run_id.as_deref())
                .bind(message.role.as_str())
                .bind(content.as_str())
                .bind(message.created_at);
        }
        let rows = match query.fetch_all(&mut *conn).await {
            Ok(rows) => rows,
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => return Ok(None),
            Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => {
                return Err(anyhow::anyhow!(
                    "failed to append messages: thread {} does not exist",
                    self.thread_id
                )
                .into());
            }
            Err(error) => return Err(failed("failed to append messages")(error)),
        };
        let stored = rows
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<String, _>("id")?,
                    row.try_get::<i64, _>("seq")?,
                ))
            })
            .collect::<Result<HashMap<_, _>, sqlx::Error>>()
            .map_err(failed("failed to append messages"))?;
        self.messages
            .iter()
            .map(|m| {
                stored.get(&m.id).copied().ok_or_else(|| {
                    anyhow::anyhow!("failed to append messages: {} was not stored", m.id).into()
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    fn gave_up(&self) -> RepositoryError {
        anyhow::anyhow!(
            "failed to append messages: thread {} kept changing under {APPEND_ATTEMPTS} attempts",
            self.thread_id
        )
        .into()
    }
}

async fn insert_run(conn: &mut AnyConnection, run: &Run) -> Result<(), RepositoryError> {
    // A new run's heartbeat starts at its creation.
    sqlx::query(&format!(
        "INSERT INTO runs ({RUN_COLUMNS}, heartbeat_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $11)"
    ))
    .bind(run.id.as_str())
    .bind(run.thread_id.as_str())
    .bind(run.agent_id.as_str())
    .bind(run.status.as_str())
    .bind(run.steps)
    .bind(run.usage.input_tokens)
    .bind(run.usage.output_tokens)
    .bind(run.error.as_deref())
    .bind(to_json(
        &run.bindings,
        "failed to encode a run's tool bindings",
    )?)
    .bind(pending_json(run)?)
    .bind(run.created_at)
    .bind(run.updated_at)
    .execute(&mut *conn)
    .await
    .map_err(run_write_failed("failed to start a run"))?;
    Ok(())
}

async fn update_run_row(conn: &mut AnyConnection, run: &Run) -> Result<(), RepositoryError> {
    // Saving a running run is proof its process is alive: it renews the
    // heartbeat too.
    let result = sqlx::query(
        "UPDATE runs SET status = $2, steps = $3, input_tokens = $4, output_tokens = $5, \
         error = $6, tool_bindings_json = $7, pending_json = $8, updated_at = $9, \
         heartbeat_at = CASE WHEN $10 = 1 THEN $9 ELSE heartbeat_at END \
         WHERE id = $1",
    )
    .bind(run.id.as_str())
    .bind(run.status.as_str())
    .bind(run.steps)
    .bind(run.usage.input_tokens)
    .bind(run.usage.output_tokens)
    .bind(run.error.as_deref())
    .bind(to_json(
        &run.bindings,
        "failed to encode a run's tool bindings",
    )?)
    .bind(pending_json(run)?)
    .bind(run.updated_at)
    .bind(i64::from(run.status == RunStatus::Running))
    .execute(&mut *conn)
    .await
    .map_err(run_write_failed("failed to update a run"))?;
    if result.rows_affected() == 0 {
        return Err(
            anyhow::anyhow!("failed to update a run: run {} does not exist", run.id).into(),
        );
    }
    Ok(())
}

#[async_trait]
impl RunsRepository for SqlRunsRepository {
    async fn insert_agent(&self, agent: &Agent) -> Result<(), RepositoryError> {
        sqlx::query(&format!(
            "INSERT INTO agents ({AGENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .bind(agent.id.as_str())
        .bind(agent.org_id.as_str())
        .bind(agent.name.as_str())
        .bind(to_json(
            &agent.config,
            "failed to encode an agent's configuration",
        )?)
        .bind(agent.created_at)
        .bind(agent.updated_at)
        .execute(&self.pool)
        .await
        .map_err(failed("failed to insert an agent"))?;
        Ok(())
    }

    async fn get_agent(&self, org: &str, id: &str) -> Result<Option<Agent>, RepositoryError> {
        let row = sqlx::query(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents WHERE org_id = $1 AND id = $2"
        ))
        .bind(org)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed("failed to read an agent"))?;
        Ok(row.as_ref().map(decode_agent).transpose()?)
    }

    async fn list_agents(
        &self,
        org: &str,
        after: Cursor,
        limit: u32,
    ) -> Result<Vec<Agent>, RepositoryError> {
        // Without a cursor the page starts before every row.
        let (after_time, after_id) = after.unwrap_or((i64::MIN, String::new()));
        let rows = sqlx::query(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents \
             WHERE org_id = $1 AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
             ORDER BY created_at, id LIMIT $4"
        ))
        .bind(org)
        .bind(after_time)
        .bind(after_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(failed("failed to list agents"))?;
        Ok(rows
            .iter()
            .map(decode_agent)
            .collect::<anyhow::Result<_>>()?)
    }

    async fn update_agent(&self, agent: &Agent) -> Result<bool, RepositoryError> {
        let result = sqlx::query(
            "UPDATE agents SET name = $3, config_json = $4, updated_at = $5 \
             WHERE org_id = $1 AND id = $2",
        )
        .bind(agent.org_id.as_str())
        .bind(agent.id.as_str())
        .bind(agent.name.as_str())
        .bind(to_json(
            &agent.config,
            "failed to encode an agent's configuration",
        )?)
        .bind(agent.updated_at)
        .execute(&self.pool)
        .await
        .map_err(failed("failed to update an agent"))?;
        Ok(result.rows_affected() > 0)
    }

    async fn delete_agent(&self, org: &str, id: &str) -> Result<bool, RepositoryError> {
        let result = sqlx::query("DELETE FROM agents WHERE org_id = $1 AND id = $2")
            .bind(org)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(failed("failed to delete an agent"))?;
        Ok(result.rows_affected() > 0)
    }

    async fn insert_thread(&self, thread: &Thread) -> Result<(), RepositoryError> {
        sqlx::query(&format!(
            "INSERT INTO threads ({THREAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ))
        .bind(thread.id.as_str())
        .bind(thread.org_id.as_str())
        .bind(thread.user_id.as_str())
        .bind(thread.agent_id.as_str())
        .bind(thread.title.as_str())
        .bind(thread.created_at)
        .bind(thread.updated_at)
        .execute(&self.pool)
        .await
        .map_err(failed("failed to insert a thread"))?;
        Ok(())
    }

    async fn get_thread(
        &self,
        org: &str,
        user: &str,
        id: &str,
    ) -> Result<Option<Thread>, RepositoryError> {
        let row = sqlx::query(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE org_id = $1 AND user_id = $2 AND id = $3"
        ))
        .bind(org)
        .bind(user)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed("failed to read a thread"))?;
        Ok(row.as_ref().map(decode_thread).transpose()?)
    }

    async fn get_thread_with_agent(
        &self,
        org: &str,
        user: &str,
        id: &str,
    ) -> Result<Option<(Thread, Option<Agent>)>, RepositoryError> {
        let row = sqlx::query(
            "SELECT t.id, t.org_id, t.user_id, t.agent_id, t.title, t.created_at, t.updated_at, \
             a.name AS agent_name, a.config_json AS agent_config_json, \
             a.created_at AS agent_created_at, a.updated_at AS agent_updated_at \
             FROM threads t LEFT JOIN agents a ON a.org_id = t.org_id AND a.id = t.agent_id \
             WHERE t.org_id = $1 AND t.user_id = $2 AND t.id = $3",
        )
        .bind(org)
        .bind(user)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed("failed to read a thread"))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let thread = decode_thread(&row)?;
        let agent = match row
            .try_get::<Option<String>, _>("agent_config_json")
            .map_err(failed("failed to read a thread's agent"))?
        {
            Some(config_json) => Some(Agent {
                id: thread.agent_id.clone(),
                org_id: thread.org_id.clone(),
                name: row
                    .try_get("agent_name")
                    .map_err(failed("failed to read a thread's agent"))?,
                config: serde_json::from_str(&config_json)
                    .context("stored agent configuration is not valid")?,
                created_at: row
                    .try_get("agent_created_at")
                    .map_err(failed("failed to read a thread's agent"))?,
                updated_at: row
                    .try_get("agent_updated_at")
                    .map_err(failed("failed to read a thread's agent"))?,
            }),
            None => None,
        };
        Ok(Some((thread, agent)))
    }

    async fn list_threads(
        &self,
        org: &str,
        user: &str,
        agent: Option<&str>,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Thread>, RepositoryError> {
        // Without a cursor the page starts after every row. Agent ids are
        // never empty, so '' stands for "any agent" (a NULL parameter would
        // have no type PostgreSQL can infer).
        let (before_time, before_id) = before.unwrap_or((i64::MAX, String::new()));
        let rows = sqlx::query(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads \
             WHERE org_id = $1 AND user_id = $2 AND ($3 = '' OR agent_id = $3) \
               AND (created_at < $4 OR (created_at = $4 AND ($5 = '' OR id < $5))) \
             ORDER BY created_at DESC, id DESC LIMIT $6"
        ))
        .bind(org)
        .bind(user)
        .bind(agent.unwrap_or_default())
        .bind(before_time)
        .bind(before_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(failed("failed to list threads"))?;
        Ok(rows
            .iter()
            .map(decode_thread)
            .collect::<anyhow::Result<_>>()?)
    }

    async fn delete_thread(
        &self,
        org: &str,
        user: &str,
        id: &str,
    ) -> Result<bool, RepositoryError> {
        // The foreign keys cascade, but deleting the children explicitly
        // does not depend on the database enforcing them.
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(failed("failed to delete a thread"))?;
        for child in ["messages", "runs"] {
            sqlx::query(&format!(
                "DELETE FROM {child} WHERE thread_id IN \
                 (SELECT id FROM threads WHERE org_id = $1 AND user_id = $2 AND id = $3)"
            ))
            .bind(org)
            .bind(user)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(failed("failed to delete a thread's messages and runs"))?;
        }
        let result =
            sqlx::query("DELETE FROM threads WHERE org_id = $1 AND user_id = $2 AND id = $3")
                .bind(org)
                .bind(user)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(failed("failed to delete a thread"))?;
        tx.commit()
            .await
            .map_err(failed("failed to delete a thread"))?;
        Ok(result.rows_affected() > 0)
    }

    async fn append_messages(
        &self,
        thread_id: &str,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let append = Append::new(thread_id, messages)?;
        for _ in 0..APPEND_ATTEMPTS {
            let mut conn = self
                .pool
                .acquire()
                .await
                .map_err(failed("failed to append messages"))?;
            if let Some(seqs) = append.on(&mut conn).await? {
                return Ok(seqs);
            }
        }
        Err(append.gave_up())
    }

    async fn list_messages(
        &self,
        thread_id: &str,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Message>, RepositoryError> {
        let rows = sqlx::query(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages \
             WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
        ))
        .bind(thread_id)
        .bind(after_seq)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(failed("failed to list messages"))?;
        Ok(rows
            .iter()
            .map(decode_message)
            .collect::<anyhow::Result<_>>()?)
    }

    async fn recent_messages(
        &self,
        thread_id: &str,
        limits: HistoryLimits,
    ) -> Result<Vec<Message>, RepositoryError> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages \
             WHERE thread_id = $1 ORDER BY seq DESC LIMIT $2"
        );
        let mut rows = sqlx::query(&sql)
            .bind(thread_id)
            .bind(i64::from(limits.max_messages))
            .fetch(&self.pool);
        let mut meter = WindowMeter::new(limits);
        let mut newest_first = Vec::new();
        while let Some(row) = rows
            .try_next()
            .await
            .map_err(failed("failed to list recent messages"))?
        {
            let message = decode_message(&row)?;
            if !meter.admits(message.size()) {
                break;
            }
            newest_first.push(message);
        }
        newest_first.reverse();
        Ok(newest_first)
    }

    async fn start_run_with(
        &self,
        run: &Run,
        input: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        self.write_run(run, RunWrite::Insert, input).await
    }

    async fn update_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        self.write_run(run, RunWrite::Update, messages).await
    }

    async fn resume_run(&self, run_id: &str, now: i64) -> Result<bool, RepositoryError> {
        // The status condition makes the move atomic: of two concurrent
        // resumes, one wins.
        let result = sqlx::query(
            "UPDATE runs SET status = 'running', updated_at = $2, heartbeat_at = $2 \
             WHERE id = $1 AND status = 'requires_action'",
        )
        .bind(run_id)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(run_write_failed("failed to resume a run"))?;
        Ok(result.rows_affected() == 1)
    }

    async fn get_run(&self, thread_id: &str, id: &str) -> Result<Option<Run>, RepositoryError> {
        let row = sqlx::query(&format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE thread_id = $1 AND id = $2"
        ))
        .bind(thread_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed("failed to read a run"))?;
        Ok(row.as_ref().map(decode_run).transpose()?)
    }

    async fn find_run(&self, id: &str) -> Result<Option<Run>, RepositoryError> {
        let row = sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("failed to read a run"))?;
        Ok(row.as_ref().map(decode_run).transpose()?)
    }

    async fn heartbeat(&self, run_ids: &[String], now: i64) -> Result<(), RepositoryError> {
        if run_ids.is_empty() {
            return Ok(());
        }
        // $1 is `now`; the ids follow as $2, $3, ….
        let placeholders = (2..run_ids.len() + 2)
            .map(|n| format!("${n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "UPDATE runs SET heartbeat_at = $1 WHERE status = 'running' AND id IN ({placeholders})"
        );
        let mut query = sqlx::query(&sql).bind(now);
        for id in run_ids {
            query = query.bind(id.as_str());
        }
        query
            .execute(&self.pool)
            .await
            .map_err(failed("failed to renew run heartbeats"))?;
        Ok(())
    }

    async fn interrupt_stale_runs(
        &self,
        stale_before: i64,
        now: i64,
    ) -> Result<u64, RepositoryError> {
        let result = sqlx::query(
            "UPDATE runs SET status = 'interrupted', error = $3, updated_at = $2 \
             WHERE status = 'running' AND heartbeat_at < $1",
        )
        .bind(stale_before)
        .bind(now)
        .bind(INTERRUPTED_ERROR)
        .execute(&self.pool)
        .await
        .map_err(failed("failed to interrupt stale runs"))?;
        Ok(result.rows_affected())
    }
}
