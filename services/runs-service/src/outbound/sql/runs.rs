//! Runs: state changes written with the messages they add, and the heartbeats
//! that tell a live run from one whose process stopped.

use anyhow::Context as _;
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{leases, messages::Append, usage, *};
use crate::domain::{
    entities::{Message, PendingCall, Run, RunStatus, ToolBinding, Usage},
    usage::UsageDelta,
};

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
        id: stored_id(row, "id")?,
        thread_id: stored_id(row, "thread_id")?,
        agent_id: stored_id(row, "agent_id")?,
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
    /// A new state of a run still in progress (running or paused): a run
    /// that ended meanwhile (interrupted by another replica's reaper,
    /// cancelled) is never overwritten.
    Update,
    /// A paused run moved back to running.
    Resume,
}

impl RunWrite {
    fn what(self) -> &'static str {
        match self {
            Self::Insert => "failed to start a run",
            Self::Update => "failed to update a run",
            Self::Resume => "failed to resume a run",
        }
    }

    async fn on(
        self,
        repo: &SqlRunsRepository,
        conn: &mut AnyConnection,
        run: &Run,
    ) -> Result<(), RepositoryError> {
        match self {
            Self::Insert => insert_run(repo, conn, run).await,
            Self::Update => update_run_row(repo, conn, run, "('running', 'requires_action')").await,
            Self::Resume => {
                update_run_row(repo, conn, run, "('requires_action')").await?;
                claim(repo, conn, run.id).await
            }
        }
    }
}

impl SqlRunsRepository {
    /// Writes `run`, appends `messages` to its thread and adds what they
    /// used to the usage ledger, in one transaction; the messages' `seq`s
    /// are returned.
    async fn write_run(
        &self,
        run: &Run,
        write: RunWrite,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        let append = if messages.is_empty() {
            None
        } else {
            Some(Append::new(run.thread_id, messages)?)
        };
        let tool_calls = UsageDelta::tool_calls(messages);
        for _ in 0..APPEND_ATTEMPTS {
            let mut tx = self.begin_write().await.map_err(failed(write.what()))?;
            let started = matches!(write, RunWrite::Insert);
            usage::add_write(&mut tx, self.postgres, run, tool_calls, started).await?;
            write.on(self, &mut tx, run).await?;
            let seqs = match &append {
                Some(append) => match append.on(&mut tx).await? {
                    Some(seqs) => seqs,
                    None => continue,
                },
                None => Vec::new(),
            };
            tx.commit().await.map_err(run_write_failed(write.what()))?;
            return Ok(seqs);
        }
        Err(append.map_or_else(
            || RepositoryError::Other(anyhow::anyhow!("the run write gave up")),
            |append| append.gave_up(),
        ))
    }
}

/// Makes this process the owner of a run it starts or resumes, with a fresh
/// lease on the database's clock.
async fn claim(
    repo: &SqlRunsRepository,
    conn: &mut AnyConnection,
    run_id: RunId,
) -> Result<(), RepositoryError> {
    let now = repo.db_now();
    sqlx::query(&format!(
        "UPDATE runs SET owner = $2, owner_name = $3, lease_expires_at = {now} + $4, \
         cancel_requested = 0 WHERE id = $1"
    ))
    .bind(run_id.to_string())
    .bind(repo.replica.id.as_str())
    .bind(repo.replica.name.as_deref())
    .bind(repo.replica.lease_millis())
    .execute(&mut *conn)
    .await
    .map_err(failed("failed to claim a run"))?;
    Ok(())
}

async fn insert_run(
    repo: &SqlRunsRepository,
    conn: &mut AnyConnection,
    run: &Run,
) -> Result<(), RepositoryError> {
    // A new run's heartbeat starts at its creation.
    sqlx::query(&format!(
        "INSERT INTO runs ({RUN_COLUMNS}, heartbeat_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $11)"
    ))
    .bind(run.id.to_string())
    .bind(run.thread_id.to_string())
    .bind(run.agent_id.to_string())
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
    claim(repo, conn, run.id).await
}

/// Saves `run`'s state, compare-and-set: only while its stored status is one
/// of `expected` (an SQL list) and, while it runs, this process owns it.
/// Otherwise the run changed hands (ended elsewhere, or taken over by
/// another replica), and [`RepositoryError::RunEnded`] stops this writer.
/// A run that stops running (ends or pauses) lets go of its kept caller.
async fn update_run_row(
    repo: &SqlRunsRepository,
    conn: &mut AnyConnection,
    run: &Run,
    expected: &str,
) -> Result<(), RepositoryError> {
    // Saving a running run is proof its process is alive: it renews the
    // heartbeat too.
    let result = sqlx::query(&format!(
        "UPDATE runs SET status = $2, steps = $3, input_tokens = $4, output_tokens = $5, \
         error = $6, tool_bindings_json = $7, pending_json = $8, updated_at = $9, \
         heartbeat_at = CASE WHEN $10 = 1 THEN $9 ELSE heartbeat_at END, \
         caller_key_id = CASE WHEN $10 = 1 THEN caller_key_id ELSE NULL END, \
         caller_sealed = CASE WHEN $10 = 1 THEN caller_sealed ELSE NULL END \
         WHERE id = $1 AND status IN {expected} AND (status <> 'running' OR owner = $11)"
    ))
    .bind(run.id.to_string())
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
    .bind(repo.replica.id.as_str())
    .execute(&mut *conn)
    .await
    .map_err(run_write_failed("failed to update a run"))?;
    if result.rows_affected() == 0 {
        return Err(RepositoryError::RunEnded);
    }
    Ok(())
}

pub(super) async fn start_run_with(
    repo: &SqlRunsRepository,
    run: &Run,
    input: &[Message],
) -> Result<Vec<i64>, RepositoryError> {
    // A run of the thread whose lease expired is provably stopped: it is
    // interrupted now rather than at the next sweep, so the thread takes
    // the new run at once.
    leases::interrupt_expired_runs(repo, Some(run.thread_id)).await?;
    repo.write_run(run, RunWrite::Insert, input).await
}

pub(super) async fn update_run_with(
    repo: &SqlRunsRepository,
    run: &Run,
    messages: &[Message],
) -> Result<Vec<i64>, RepositoryError> {
    repo.write_run(run, RunWrite::Update, messages).await
}

pub(super) async fn resume_run_with(
    repo: &SqlRunsRepository,
    run: &Run,
    messages: &[Message],
) -> Result<Option<Vec<i64>>, RepositoryError> {
    match repo.write_run(run, RunWrite::Resume, messages).await {
        Ok(seqs) => Ok(Some(seqs)),
        Err(RepositoryError::RunEnded) => Ok(None),
        Err(error) => Err(error),
    }
}

pub(super) async fn resume_run(
    repo: &SqlRunsRepository,
    run_id: RunId,
    now: i64,
) -> Result<bool, RepositoryError> {
    // The status condition makes the move atomic: of two concurrent
    // resumes, one wins.
    let result = sqlx::query(
        "UPDATE runs SET status = 'running', updated_at = $2, heartbeat_at = $2 \
         WHERE id = $1 AND status = 'requires_action'",
    )
    .bind(run_id.to_string())
    .bind(now)
    .execute(&repo.pool)
    .await
    .map_err(run_write_failed("failed to resume a run"))?;
    Ok(result.rows_affected() == 1)
}

pub(super) async fn get_run(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    id: RunId,
) -> Result<Option<Run>, RepositoryError> {
    let row = sqlx::query(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE thread_id = $1 AND id = $2"
    ))
    .bind(thread_id.to_string())
    .bind(id.to_string())
    .fetch_optional(&repo.pool)
    .await
    .map_err(failed("failed to read a run"))?;
    Ok(row.as_ref().map(decode_run).transpose()?)
}

pub(super) async fn find_run(
    repo: &SqlRunsRepository,
    id: RunId,
) -> Result<Option<Run>, RepositoryError> {
    let row = sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"))
        .bind(id.to_string())
        .fetch_optional(&repo.pool)
        .await
        .map_err(failed("failed to read a run"))?;
    Ok(row.as_ref().map(decode_run).transpose()?)
}
