//! A run's events as they were streamed, JSON per event, for `WatchRun`.

use anyhow::Context as _;
use sqlx::{AnyConnection, Row as _};

use super::*;
use crate::domain::events::Envelope;

/// Rows of one `INSERT` at most; the rest of a batch follows in more
/// statements of the same transaction.
const ROWS_PER_STATEMENT: usize = 64;

/// Event JSON of one `INSERT` at most, in bytes (a statement holds at least
/// one event, however large).
const BYTES_PER_STATEMENT: usize = 1024 * 1024;

pub(super) async fn append_run_events(
    repo: &SqlRunsRepository,
    events: &[Envelope],
) -> Result<(), RepositoryError> {
    let rows = events
        .iter()
        .map(|event| Ok((event, to_json(event, "failed to encode a run event")?)))
        .collect::<Result<Vec<_>, RepositoryError>>()?;
    let statements = statements(&rows);
    if let [only] = statements[..] {
        // One statement is atomic on its own: a transaction around it
        // would only add its BEGIN and COMMIT, two more round trips to the
        // connection for what is most often a single event.
        let mut conn = repo
            .pool
            .acquire()
            .await
            .map_err(failed("failed to store run events"))?;
        return insert(&mut conn, only).await;
    }
    let mut tx = repo
        .begin_write()
        .await
        .map_err(failed("failed to store run events"))?;
    for statement in statements {
        insert(&mut tx, statement).await?;
    }
    tx.commit()
        .await
        .map_err(failed("failed to store run events"))?;
    Ok(())
}

/// `rows` cut into statements within [`ROWS_PER_STATEMENT`] and
/// [`BYTES_PER_STATEMENT`].
fn statements<T>(rows: &[(T, String)]) -> Vec<&[(T, String)]> {
    let mut statements = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, json)) in rows.iter().enumerate() {
        let full = i - start == ROWS_PER_STATEMENT || bytes + json.len() > BYTES_PER_STATEMENT;
        if i > start && full {
            statements.push(&rows[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += json.len();
    }
    if start < rows.len() {
        statements.push(&rows[start..]);
    }
    statements
}

async fn insert(
    conn: &mut AnyConnection,
    rows: &[(&Envelope, String)],
) -> Result<(), RepositoryError> {
    let values: Vec<String> = (0..rows.len())
        .map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3))
        .collect();
    let sql = format!(
        "INSERT INTO run_events (run_id, seq, event_json) VALUES {} \
         ON CONFLICT (run_id, seq) DO NOTHING",
        values.join(", ")
    );
    let mut query = sqlx::query(&sql);
    for (event, json) in rows {
        query = query
            .bind(event.run_id.to_string())
            .bind(event.sequence)
            .bind(json.as_str());
    }
    query
        .execute(&mut *conn)
        .await
        .map_err(failed("failed to store run events"))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(sizes: &[usize]) -> Vec<((), String)> {
        sizes.iter().map(|&n| ((), "x".repeat(n))).collect()
    }

    fn lengths(statements: &[&[((), String)]]) -> Vec<usize> {
        statements.iter().map(|s| s.len()).collect()
    }

    #[test]
    fn a_batch_is_cut_at_the_rows_and_bytes_of_a_statement() {
        assert!(statements(&rows(&[])).is_empty());
        let many = rows(&vec![10; ROWS_PER_STATEMENT * 2 + 1]);
        assert_eq!(
            lengths(&statements(&many)),
            vec![ROWS_PER_STATEMENT, ROWS_PER_STATEMENT, 1]
        );
        let half = BYTES_PER_STATEMENT / 2;
        assert_eq!(lengths(&statements(&rows(&[half, half, 1]))), vec![2, 1]);
        // An event larger than a statement's bytes is a statement alone.
        let big = BYTES_PER_STATEMENT * 2;
        assert_eq!(lengths(&statements(&rows(&[1, big, 1]))), vec![1, 1, 1]);
    }
}
