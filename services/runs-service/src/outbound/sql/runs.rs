//! Runs: state changes written with the messages they add, and the heartbeats
//! that tell a live run from one whose process stopped.

use anyhow::Context as _;
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{messages::Append, *};
use crate::domain::entities::{Message, PendingCall, Run, RunStatus, ToolBinding, Usage};

/// The error a run records when its process stopped renewing its heartbeat.
const INTERRUPTED_ERROR: &str = "the process running it stopped";

pub(super) fn decode_run(row: &AnyRow) -> anyhow::Result<Run> {
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

pub(super) async fn start_run_with(
    repo: &SqlRunsRepository,
    run: &Run,
    input: &[Message],
) -> Result<Vec<i64>, RepositoryError> {
    repo.write_run(run, RunWrite::Insert, input).await
}

pub(super) async fn update_run_with(
    repo: &SqlRunsRepository,
    run: &Run,
    messages: &[Message],
) -> Result<Vec<i64>, RepositoryError> {
    repo.write_run(run, RunWrite::Update, messages).await
}

pub(super) async fn resume_run(
    repo: &SqlRunsRepository,
    run_id: &str,
    now: i64,
) -> Result<bool, RepositoryError> {
    // The status condition makes the move atomic: of two concurrent
    // resumes, one wins.
    let result = sqlx::query(
        "UPDATE runs SET status = 'running', updated_at = $2, heartbeat_at = $2 \
         WHERE id = $1 AND status = 'requires_action'",
    )
    .bind(run_id)
    .bind(now)
    .execute(&repo.pool)
    .await
    .map_err(run_write_failed("failed to resume a run"))?;
    Ok(result.rows_affected() == 1)
}

pub(super) async fn get_run(
    repo: &SqlRunsRepository,
    thread_id: &str,
    id: &str,
) -> Result<Option<Run>, RepositoryError> {
    let row = sqlx::query(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE thread_id = $1 AND id = $2"
    ))
    .bind(thread_id)
    .bind(id)
    .fetch_optional(&repo.pool)
    .await
    .map_err(failed("failed to read a run"))?;
    Ok(row.as_ref().map(decode_run).transpose()?)
}

pub(super) async fn find_run(
    repo: &SqlRunsRepository,
    id: &str,
) -> Result<Option<Run>, RepositoryError> {
    let row = sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"))
        .bind(id)
        .fetch_optional(&repo.pool)
        .await
        .map_err(failed("failed to read a run"))?;
    Ok(row.as_ref().map(decode_run).transpose()?)
}

pub(super) async fn heartbeat(
    repo: &SqlRunsRepository,
    run_ids: &[String],
    now: i64,
) -> Result<(), RepositoryError> {
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
        .execute(&repo.pool)
        .await
        .map_err(failed("failed to renew run heartbeats"))?;
    Ok(())
}

pub(super) async fn interrupt_stale_runs(
    repo: &SqlRunsRepository,
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
    .execute(&repo.pool)
    .await
    .map_err(failed("failed to interrupt stale runs"))?;
    Ok(result.rows_affected())
}
