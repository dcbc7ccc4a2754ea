//! The usage ledger: added to in the transaction of the run write that used
//! it, summed per day for `GetUsage` and budgets.

use sqlx::{AnyConnection, Row};

use super::{SqlRunsRepository, failed};
use crate::domain::{
    entities::{Run, Usage},
    ports::RepositoryError,
    usage::{UsageGroup, UsageQuery, UsageRow, day_of},
};

/// Adds what a write of `run` uses to the day of its last change, for its
/// thread's organization and user and its agent: the tokens its totals grew
/// by since they were last stored, `tool_calls` and, when `started`, one
/// run. Runs in the write's transaction before the run row is written, so
/// the stored totals it subtracts are the ones this write replaces; the
/// read and the addition are one statement.
pub(super) async fn add_write(
    conn: &mut AnyConnection,
    postgres: bool,
    run: &Run,
    tool_calls: i64,
    started: bool,
) -> Result<(), RepositoryError> {
    let runs = i64::from(started);
    // Totals only grow; a smaller one (a write replayed out of order) adds
    // nothing. A run that never used a token adds none.
    if tool_calls == 0 && runs == 0 && run.usage == Usage::default() {
        return Ok(());
    }
    let greatest = if postgres { "GREATEST" } else { "MAX" };
    sqlx::query(&format!(
        "INSERT INTO usage_daily (org_id, day, agent_id, user_id, input_tokens, output_tokens, tool_calls, runs) \
         SELECT org_id, day, agent_id, user_id, input_tokens, output_tokens, tool_calls, runs FROM \
           (SELECT t.org_id, $2 AS day, $3 AS agent_id, t.user_id, \
                   {greatest}($4 - COALESCE(r.input_tokens, 0), 0) AS input_tokens, \
                   {greatest}($5 - COALESCE(r.output_tokens, 0), 0) AS output_tokens, \
                   $6 AS tool_calls, $7 AS runs \
            FROM threads t LEFT JOIN runs r ON r.id = $8 WHERE t.id = $1) AS used \
         WHERE input_tokens > 0 OR output_tokens > 0 OR tool_calls > 0 OR runs > 0 \
         ON CONFLICT (org_id, day, agent_id, user_id) DO UPDATE SET \
         input_tokens = usage_daily.input_tokens + excluded.input_tokens, \
         output_tokens = usage_daily.output_tokens + excluded.output_tokens, \
         tool_calls = usage_daily.tool_calls + excluded.tool_calls, \
         runs = usage_daily.runs + excluded.runs",
    ))
    .bind(run.thread_id.to_string())
    .bind(day_of(run.updated_at))
    .bind(run.agent_id.to_string())
    .bind(run.usage.input_tokens)
    .bind(run.usage.output_tokens)
    .bind(tool_calls)
    .bind(runs)
    .bind(run.id.to_string())
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
