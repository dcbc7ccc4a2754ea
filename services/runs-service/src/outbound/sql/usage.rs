//! The usage ledger: added to in the transaction of the run write that used
//! it, summed per day for `GetUsage` and budgets.

use sqlx::{AnyConnection, Row};

use super::{SqlRunsRepository, failed};
use crate::domain::{
    entities::Run,
    ports::RepositoryError,
    usage::{UsageDelta, UsageGroup, UsageQuery, UsageRow, day_of},
};

/// A run's token totals as stored, before this write; zero for a new run.
pub(super) async fn stored_tokens(
    conn: &mut AnyConnection,
    run: &Run,
) -> Result<(i64, i64), RepositoryError> {
    let row = sqlx::query("SELECT input_tokens, output_tokens FROM runs WHERE id = $1")
        .bind(run.id.to_string())
        .fetch_optional(&mut *conn)
        .await
        .map_err(failed("failed to read a run's usage"))?;
    row.map_or(Ok((0, 0)), |row| {
        Ok((
            row.try_get("input_tokens")
                .map_err(failed("failed to read a run's usage"))?,
            row.try_get("output_tokens")
                .map_err(failed("failed to read a run's usage"))?,
        ))
    })
}

/// Adds `delta` to the day of `run`'s last change, for its thread's
/// organization and user and its agent.
pub(super) async fn add(
    conn: &mut AnyConnection,
    run: &Run,
    delta: UsageDelta,
) -> Result<(), RepositoryError> {
    if delta.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO usage_daily (org_id, day, agent_id, user_id, input_tokens, output_tokens, tool_calls, runs) \
         SELECT t.org_id, $2, $3, t.user_id, $4, $5, $6, $7 FROM threads t WHERE t.id = $1 \
         ON CONFLICT (org_id, day, agent_id, user_id) DO UPDATE SET \
         input_tokens = usage_daily.input_tokens + excluded.input_tokens, \
         output_tokens = usage_daily.output_tokens + excluded.output_tokens, \
         tool_calls = usage_daily.tool_calls + excluded.tool_calls, \
         runs = usage_daily.runs + excluded.runs",
    )
    .bind(run.thread_id.to_string())
    .bind(day_of(run.updated_at))
    .bind(run.agent_id.to_string())
    .bind(delta.input_tokens)
    .bind(delta.output_tokens)
    .bind(delta.tool_calls)
    .bind(delta.runs)
    .execute(&mut *conn)
    .await
    .map_err(failed("failed to record usage"))?;
    Ok(())
}

/// The usage of `query`, one row per day (and agent or user).
pub(super) async fn usage(
    repo: &SqlRunsRepository,
    query: &UsageQuery,
) -> Result<Vec<UsageRow>, RepositoryError> {
    let (agent, user) = match query.group {
        UsageGroup::Organization => ("''", "''"),
        UsageGroup::Agent => ("agent_id", "''"),
        UsageGroup::User => ("''", "user_id"),
    };
    let sql = format!(
        "SELECT day, {agent} AS agent, {user} AS usr, \
         CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
         CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, \
         CAST(SUM(tool_calls) AS BIGINT) AS tool_calls, CAST(SUM(runs) AS BIGINT) AS runs \
         FROM usage_daily WHERE org_id = $1 AND day >= $2 AND day <= $3 \
         GROUP BY day, agent, usr ORDER BY day, agent, usr"
    );
    let read = failed("failed to read usage");
    let rows = sqlx::query(&sql)
        .bind(&query.org_id)
        .bind(query.from.format("%Y-%m-%d").to_string())
        .bind(query.to.format("%Y-%m-%d").to_string())
        .fetch_all(&repo.pool)
        .await
        .map_err(read)?;
    rows.iter()
        .map(|row| {
            Ok(UsageRow {
                period: row.try_get("day")?,
                agent_id: row.try_get("agent")?,
                user_id: row.try_get("usr")?,
                input_tokens: row.try_get("input_tokens")?,
                output_tokens: row.try_get("output_tokens")?,
                tool_calls: row.try_get("tool_calls")?,
                runs: row.try_get("runs")?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(failed("failed to read usage"))
}
