//! Threads: one user's conversations with an agent.

use anyhow::Context as _;
use sqlx::{Row, any::AnyRow};

use super::*;
use crate::domain::entities::{Agent, Thread};

pub(super) fn decode_thread(row: &AnyRow) -> anyhow::Result<Thread> {
    Ok(Thread {
        id: stored_id(row, "id")?,
        org_id: row.try_get("org_id")?,
        user_id: row.try_get("user_id")?,
        agent_id: stored_id(row, "agent_id")?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

pub(super) async fn insert_thread(
    repo: &SqlRunsRepository,
    thread: &Thread,
) -> Result<(), RepositoryError> {
    sqlx::query(&format!(
        "INSERT INTO threads ({THREAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    ))
    .bind(thread.id.to_string())
    .bind(thread.org_id.as_str())
    .bind(thread.user_id.as_str())
    .bind(thread.agent_id.to_string())
    .bind(thread.title.as_str())
    .bind(thread.created_at)
    .bind(thread.updated_at)
    .execute(&repo.pool)
    .await
    .map_err(failed("failed to insert a thread"))?;
    Ok(())
}

pub(super) async fn get_thread(
    repo: &SqlRunsRepository,
    org: &str,
    user: &str,
    id: ThreadId,
) -> Result<Option<Thread>, RepositoryError> {
    let row = sqlx::query(&format!(
        "SELECT {THREAD_COLUMNS} FROM threads WHERE org_id = $1 AND user_id = $2 AND id = $3"
    ))
    .bind(org)
    .bind(user)
    .bind(id.to_string())
    .fetch_optional(&repo.pool)
    .await
    .map_err(failed("failed to read a thread"))?;
    Ok(row.as_ref().map(decode_thread).transpose()?)
}

pub(super) async fn get_thread_with_agent(
    repo: &SqlRunsRepository,
    org: &str,
    user: &str,
    id: ThreadId,
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
    .bind(id.to_string())
    .fetch_optional(&repo.pool)
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
            id: thread.agent_id,
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

pub(super) async fn list_threads(
    repo: &SqlRunsRepository,
    org: &str,
    user: &str,
    agent: Option<AgentId>,
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
    .bind(agent.map(|id| id.to_string()).unwrap_or_default())
    .bind(before_time)
    .bind(before_id)
    .bind(i64::from(limit))
    .fetch_all(&repo.pool)
    .await
    .map_err(failed("failed to list threads"))?;
    Ok(rows
        .iter()
        .map(decode_thread)
        .collect::<anyhow::Result<_>>()?)
}

pub(super) async fn delete_thread(
    repo: &SqlRunsRepository,
    org: &str,
    user: &str,
    id: ThreadId,
) -> Result<bool, RepositoryError> {
    // The foreign keys cascade, but deleting the children explicitly
    // does not depend on the database enforcing them.
    let mut tx = repo
        .begin_write()
        .await
        .map_err(failed("failed to delete a thread"))?;
    for child in ["messages", "runs", "tool_pins", "tool_pin_changes"] {
        sqlx::query(&format!(
            "DELETE FROM {child} WHERE thread_id IN \
             (SELECT id FROM threads WHERE org_id = $1 AND user_id = $2 AND id = $3)"
        ))
        .bind(org)
        .bind(user)
        .bind(id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(failed(
            "failed to delete a thread's messages, runs and tool pins",
        ))?;
    }
    let result = sqlx::query("DELETE FROM threads WHERE org_id = $1 AND user_id = $2 AND id = $3")
        .bind(org)
        .bind(user)
        .bind(id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(failed("failed to delete a thread"))?;
    tx.commit()
        .await
        .map_err(failed("failed to delete a thread"))?;
    Ok(result.rows_affected() > 0)
}
