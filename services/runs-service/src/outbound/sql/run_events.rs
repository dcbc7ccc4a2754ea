//! A run's events as they were streamed, JSON per event, for `WatchRun`.

use anyhow::Context as _;
use sqlx::Row as _;

use super::*;
use crate::domain::events::Envelope;

pub(super) async fn append_run_event(
    repo: &SqlRunsRepository,
    event: &Envelope,
) -> Result<(), RepositoryError> {
    let json = to_json(event, "failed to encode a run event")?;
    sqlx::query(
        "INSERT INTO run_events (run_id, seq, event_json) VALUES ($1, $2, $3) \
         ON CONFLICT (run_id, seq) DO NOTHING",
    )
    .bind(event.run_id.to_string())
    .bind(event.sequence)
    .bind(json)
    .execute(&repo.pool)
    .await
    .map_err(failed("failed to store a run event"))?;
    Ok(())
}

pub(super) async fn run_events(
    repo: &SqlRunsRepository,
    run_id: RunId,
    from: i64,
    limit: u32,
) -> Result<Vec<Envelope>, RepositoryError> {
    let rows = sqlx::query(
        "SELECT event_json FROM run_events WHERE run_id = $1 AND seq >= $2 \
         ORDER BY seq LIMIT $3",
    )
    .bind(run_id.to_string())
    .bind(from)
    .bind(i64::from(limit))
    .fetch_all(&repo.pool)
    .await
    .map_err(failed("failed to read run events"))?;
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        let json: String = row
            .try_get("event_json")
            .context("failed to read a run event")?;
        events.push(serde_json::from_str(&json).context("a stored run event is not valid")?);
    }
    Ok(events)
}

pub(super) async fn last_run_event(
    repo: &SqlRunsRepository,
    run_id: RunId,
) -> Result<i64, RepositoryError> {
    let row = sqlx::query("SELECT MAX(seq) AS last FROM run_events WHERE run_id = $1")
        .bind(run_id.to_string())
        .fetch_one(&repo.pool)
        .await
        .map_err(failed("failed to read a run's last event"))?;
    let last: Option<i64> = row
        .try_get("last")
        .context("failed to read a run's last event")?;
    Ok(last.unwrap_or(0))
}
