//! Agents: an organization's model settings, tools and instructions.

use anyhow::Context as _;
use sqlx::{Row, any::AnyRow};

use super::*;
use crate::domain::entities::Agent;

pub(super) fn decode_agent(row: &AnyRow) -> anyhow::Result<Agent> {
    let config_json: String = row.try_get("config_json")?;
    Ok(Agent {
        id: stored_id(row, "id")?,
        org_id: row.try_get("org_id")?,
        name: row.try_get("name")?,
        config: serde_json::from_str(&config_json)
            .context("stored agent configuration is not valid")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

pub(super) async fn insert_agent(
    repo: &SqlRunsRepository,
    agent: &Agent,
) -> Result<(), RepositoryError> {
    sqlx::query(&format!(
        "INSERT INTO agents ({AGENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
    ))
    .bind(agent.id.to_string())
    .bind(agent.org_id.as_str())
    .bind(agent.name.as_str())
    .bind(to_json(
        &agent.config,
        "failed to encode an agent's configuration",
    )?)
    .bind(agent.created_at)
    .bind(agent.updated_at)
    .execute(&repo.pool)
    .await
    .map_err(failed("failed to insert an agent"))?;
    Ok(())
}

pub(super) async fn get_agent(
    repo: &SqlRunsRepository,
    org: &str,
    id: AgentId,
) -> Result<Option<Agent>, RepositoryError> {
    let row = sqlx::query(&format!(
        "SELECT {AGENT_COLUMNS} FROM agents WHERE org_id = $1 AND id = $2"
    ))
    .bind(org)
    .bind(id.to_string())
    .fetch_optional(&repo.pool)
    .await
    .map_err(failed("failed to read an agent"))?;
    Ok(row.as_ref().map(decode_agent).transpose()?)
}

pub(super) async fn list_agents(
    repo: &SqlRunsRepository,
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
    .fetch_all(&repo.pool)
    .await
    .map_err(failed("failed to list agents"))?;
    Ok(rows
        .iter()
        .map(decode_agent)
        .collect::<anyhow::Result<_>>()?)
}

pub(super) async fn update_agent(
    repo: &SqlRunsRepository,
    agent: &Agent,
) -> Result<bool, RepositoryError> {
    let result = sqlx::query(
        "UPDATE agents SET name = $3, config_json = $4, updated_at = $5 \
         WHERE org_id = $1 AND id = $2",
    )
    .bind(agent.org_id.as_str())
    .bind(agent.id.to_string())
    .bind(agent.name.as_str())
    .bind(to_json(
        &agent.config,
        "failed to encode an agent's configuration",
    )?)
    .bind(agent.updated_at)
    .execute(&repo.pool)
    .await
    .map_err(failed("failed to update an agent"))?;
    Ok(result.rows_affected() > 0)
}

pub(super) async fn delete_agent(
    repo: &SqlRunsRepository,
    org: &str,
    id: AgentId,
) -> Result<bool, RepositoryError> {
    let result = sqlx::query("DELETE FROM agents WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id.to_string())
        .execute(&repo.pool)
        .await
        .map_err(failed("failed to delete an agent"))?;
    Ok(result.rows_affected() > 0)
}
