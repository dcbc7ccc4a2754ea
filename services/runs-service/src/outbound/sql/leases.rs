//! Run leases on the database's clock: which replica process owns a run,
//! until when, and whether `CancelRun` asked for its end. Every time here is
//! the database's (`SqlRunsRepository::db_now`), never a replica's, so
//! replicas whose clocks disagree agree on when a lease expired.

use std::time::Duration;

use sqlx::Row as _;

use super::{runs::decode_run, *};
use crate::domain::{entities::RunStatus, ports::LeaseState};

/// The error a run records when its lease expired.
pub(super) const LEASE_EXPIRED: &str =
    "interrupted: its lease expired (the replica running it stopped renewing it)";
/// What a run taken over and then interrupted records first.
pub(super) const REPLICA_STOPPED: &str =
    "interrupted: the replica running it stopped, and another could not continue it";
/// The error a run records when its replica restarted while running it.
const REPLICA_RESTARTED: &str = "interrupted: the replica running it restarted";

/// Takeovers of one run at most, unless configured.
pub const DEFAULT_MAX_TAKEOVERS: u32 = 2;

/// The SQL condition of a run that another replica takes over rather than
/// interrupts: it keeps its caller and was taken over fewer than `$max`
/// times (`max` is the parameter's number).
pub(super) fn continues(max: usize) -> String {
    format!("(caller_sealed IS NOT NULL AND takeovers < ${max})")
}

/// The replica process a repository writes for.
#[derive(Debug, Clone)]
pub struct Replica {
    /// This process's id, new at every start.
    pub id: String,
    /// The replica's stable name (a pod name), shared by its successive
    /// processes; `None` when it has none.
    pub name: Option<String>,
    /// How long a lease lasts past its last renewal.
    pub lease: Duration,
    /// How many times a run that continues on another replica may be
    /// taken over; past it, the run ends interrupted.
    pub max_takeovers: u32,
}

impl Replica {
    /// A process with a new id.
    pub fn new(name: Option<String>, lease: Duration) -> Self {
        Self {
            id: crate::domain::entities::new_id(),
            name,
            lease,
            max_takeovers: DEFAULT_MAX_TAKEOVERS,
        }
    }

    /// The same process, taking a run over at most `max` times.
    pub fn with_max_takeovers(mut self, max: u32) -> Self {
        self.max_takeovers = max;
        self
    }

    pub(super) fn lease_millis(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX / 2)
    }
}

/// `$1, $2, …` for `count` parameters after the first `skip`.
fn placeholders(skip: usize, count: usize) -> String {
    (skip + 1..=skip + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) async fn heartbeat(
    repo: &SqlRunsRepository,
    run_ids: &[RunId],
) -> Result<Vec<(RunId, LeaseState)>, RepositoryError> {
    if run_ids.is_empty() {
        return Ok(Vec::new());
    }
    let now = repo.db_now();
    let ids = placeholders(2, run_ids.len());
    // The old replica-clock heartbeat is renewed too, for processes of an
    // earlier version still reading it.
    let renew = format!(
        "UPDATE runs SET lease_expires_at = {now} + $1, heartbeat_at = {now} \
         WHERE owner = $2 AND status = 'running' AND id IN ({ids})"
    );
    let mut query = sqlx::query(&renew)
        .bind(repo.replica.lease_millis())
        .bind(repo.replica.id.as_str());
    for id in run_ids {
        query = query.bind(id.to_string());
    }
    query
        .execute(&repo.pool)
        .await
        .map_err(failed("failed to renew run leases"))?;
    let read = format!(
        "SELECT id, status, owner, cancel_requested FROM runs WHERE id IN ({})",
        placeholders(0, run_ids.len())
    );
    let mut query = sqlx::query(&read);
    for id in run_ids {
        query = query.bind(id.to_string());
    }
    let rows = query
        .fetch_all(&repo.pool)
        .await
        .map_err(failed("failed to read run leases"))?;
    let mut states = Vec::with_capacity(run_ids.len());
    for id in run_ids {
        let row = rows.iter().find(|row| {
            row.try_get::<String, _>("id")
                .is_ok_and(|r| r == id.to_string())
        });
        states.push((*id, lease_state(repo, row)?));
    }
    Ok(states)
}

fn lease_state(
    repo: &SqlRunsRepository,
    row: Option<&AnyRow>,
) -> Result<LeaseState, RepositoryError> {
    let Some(row) = row else {
        return Ok(LeaseState::Lost);
    };
    let read = |e| RepositoryError::Other(anyhow::Error::new(e).context("failed to read a lease"));
    let status: String = row.try_get("status").map_err(read)?;
    let owner: Option<String> = row.try_get("owner").map_err(read)?;
    let cancel: i64 = row.try_get("cancel_requested").map_err(read)?;
    Ok(lease_of(
        &status,
        owner.as_deref() == Some(repo.replica.id.as_str()),
        cancel != 0,
    ))
}

/// A run's lease as its owner sees it. Only another process ends a run as
/// interrupted, or cancels it while it runs; the other ends are the owner's
/// own, written while its task finishes, and take nothing from it.
fn lease_of(status: &str, owned: bool, cancel_requested: bool) -> LeaseState {
    let taken = [
        RunStatus::Interrupted.as_str(),
        RunStatus::Cancelled.as_str(),
    ];
    if !owned || taken.contains(&status) {
        LeaseState::Lost
    } else if cancel_requested && status == RunStatus::Running.as_str() {
        LeaseState::CancelRequested
    } else {
        LeaseState::Held
    }
}

/// Marks running runs whose lease expired as interrupted: of thread
/// `thread_id` (a new run of the thread supersedes them, whatever their
/// agent's recovery), or of every thread except those another replica
/// takes over (see [`continues`]) — unless none did for a whole lease past
/// the expiry (no replica with the caller keys is left), so that no run
/// stays running for ever.
pub(super) async fn interrupt_expired_runs(
    repo: &SqlRunsRepository,
    thread_id: Option<ThreadId>,
) -> Result<u64, RepositoryError> {
    let now = repo.db_now();
    let result = sqlx::query(&format!(
        "UPDATE runs SET status = 'interrupted', error = $1, updated_at = $2, \
           caller_key_id = NULL, caller_sealed = NULL \
         WHERE status = 'running' AND lease_expires_at < {now} \
           AND (($3 = '' AND (NOT {} OR lease_expires_at < {now} - $5)) OR thread_id = $3)",
        continues(4)
    ))
    .bind(LEASE_EXPIRED)
    .bind(switchboard_db::now_millis())
    .bind(thread_id.map(|id| id.to_string()).unwrap_or_default())
    .bind(i64::from(repo.replica.max_takeovers))
    .bind(repo.replica.lease_millis())
    .execute(&repo.pool)
    .await
    .map_err(failed("failed to interrupt runs whose lease expired"))?;
    Ok(result.rows_affected())
}

/// The runs of `org`, and of its user `user`, running on any replica
/// whose lease holds.
pub(super) async fn live_runs(
    repo: &SqlRunsRepository,
    org: &str,
    user: &str,
) -> Result<LiveRuns, RepositoryError> {
    let now = repo.db_now();
    let row = sqlx::query(&format!(
        "SELECT COUNT(*) AS org_runs, \
                COALESCE(SUM(CASE WHEN t.user_id = $2 THEN 1 ELSE 0 END), 0) AS user_runs \
         FROM runs r JOIN threads t ON t.id = r.thread_id \
         WHERE t.org_id = $1 AND r.status = 'running' AND r.lease_expires_at >= {now}"
    ))
    .bind(org)
    .bind(user)
    .fetch_one(&repo.pool)
    .await
    .map_err(failed("failed to count the runs in flight"))?;
    let count = |column: &str| -> Result<u64, RepositoryError> {
        let value: i64 = row
            .try_get(column)
            .map_err(failed("failed to count the runs in flight"))?;
        Ok(u64::try_from(value).unwrap_or(0))
    };
    Ok(LiveRuns {
        org: count("org_runs")?,
        user: count("user_runs")?,
    })
}

/// Marks the running runs of this replica's previous process as
/// interrupted, except those this process takes over (see [`continues`]).
pub(super) async fn interrupt_previous_process_runs(
    repo: &SqlRunsRepository,
) -> Result<u64, RepositoryError> {
    let Some(name) = &repo.replica.name else {
        return Ok(0);
    };
    let result = sqlx::query(&format!(
        "UPDATE runs SET status = 'interrupted', error = $1, updated_at = $2, \
           caller_key_id = NULL, caller_sealed = NULL \
         WHERE status = 'running' AND owner_name = $3 AND owner <> $4 AND NOT {}",
        continues(5)
    ))
    .bind(REPLICA_RESTARTED)
    .bind(switchboard_db::now_millis())
    .bind(name.as_str())
    .bind(repo.replica.id.as_str())
    .bind(i64::from(repo.replica.max_takeovers))
    .execute(&repo.pool)
    .await
    .map_err(failed(
        "failed to interrupt the runs of this replica's previous process",
    ))?;
    Ok(result.rows_affected())
}

pub(super) async fn request_cancel(
    repo: &SqlRunsRepository,
    run_id: RunId,
    reason: &str,
) -> Result<Option<Run>, RepositoryError> {
    let now = repo.db_now();
    // No process executes a paused run, nor one whose lease expired: they
    // end here.
    sqlx::query(&format!(
        "UPDATE runs SET status = 'cancelled', error = $2, updated_at = $3, pending_json = NULL, \
           caller_key_id = NULL, caller_sealed = NULL \
         WHERE id = $1 AND (status = 'requires_action' \
           OR (status = 'running' AND lease_expires_at < {now}))"
    ))
    .bind(run_id.to_string())
    .bind(reason)
    .bind(switchboard_db::now_millis())
    .execute(&repo.pool)
    .await
    .map_err(run_write_failed("failed to cancel a run"))?;
    sqlx::query("UPDATE runs SET cancel_requested = 1 WHERE id = $1 AND status = 'running'")
        .bind(run_id.to_string())
        .execute(&repo.pool)
        .await
        .map_err(failed("failed to request a run's cancellation"))?;
    runs::find_run(repo, run_id).await
}

pub(super) async fn list_runs(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    before: Cursor,
    limit: u32,
) -> Result<Vec<Run>, RepositoryError> {
    let (before_time, before_id) = before.unwrap_or((i64::MAX, String::new()));
    let rows = sqlx::query(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE thread_id = $1 \
           AND (created_at < $2 OR (created_at = $2 AND ($3 = '' OR id < $3))) \
         ORDER BY created_at DESC, id DESC LIMIT $4"
    ))
    .bind(thread_id.to_string())
    .bind(before_time)
    .bind(before_id)
    .bind(i64::from(limit))
    .fetch_all(&repo.pool)
    .await
    .map_err(failed("failed to list runs"))?;
    Ok(rows.iter().map(decode_run).collect::<anyhow::Result<_>>()?)
}
