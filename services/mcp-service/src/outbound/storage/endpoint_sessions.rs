//! The MCP endpoint's shared sessions in SQL (SQLite or PostgreSQL through
//! `sqlx::Any`), one row each.

use anyhow::Context as _;
use async_trait::async_trait;
use sqlx::{AnyPool, Row};

use crate::domain::endpoint_session::{EndpointSessionStore, SessionOwner, StoredSession};

/// [`EndpointSessionStore`] over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlEndpointSessions {
    pool: AnyPool,
}

impl SqlEndpointSessions {
    /// Sessions in `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl EndpointSessionStore for SqlEndpointSessions {
    async fn save(&self, id: &str, session: &StoredSession, now: i64) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO endpoint_sessions \
             (id, org_id, user_id, path, initialize_json, created_at, used_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
        )
        .bind(id)
        .bind(&session.owner.org_id)
        .bind(&session.owner.user_id)
        .bind(&session.owner.path)
        .bind(&session.initialize_json)
        .bind(now)
        .execute(&self.pool)
        .await
        .context("failed to record an endpoint session")?;
        Ok(())
    }

    async fn load(&self, id: &str, used_since: i64) -> anyhow::Result<Option<StoredSession>> {
        let row = sqlx::query(
            "SELECT org_id, user_id, path, initialize_json FROM endpoint_sessions \
             WHERE id = $1 AND used_at >= $2",
        )
        .bind(id)
        .bind(used_since)
        .fetch_optional(&self.pool)
        .await
        .context("failed to read an endpoint session")?;
        row.map(|row| -> anyhow::Result<StoredSession> {
            Ok(StoredSession {
                owner: SessionOwner {
                    org_id: row.try_get("org_id")?,
                    user_id: row.try_get("user_id")?,
                    path: row.try_get("path")?,
                },
                initialize_json: row.try_get("initialize_json")?,
            })
        })
        .transpose()
    }

    async fn touch(&self, id: &str, now: i64) -> anyhow::Result<()> {
        sqlx::query("UPDATE endpoint_sessions SET used_at = $2 WHERE id = $1 AND used_at < $2")
            .bind(id)
            .bind(now)
            .execute(&self.pool)
            .await
            .context("failed to note an endpoint session's use")?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> anyhow::Result<()> {
        sqlx::query("DELETE FROM endpoint_sessions WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .context("failed to forget an endpoint session")?;
        Ok(())
    }

    async fn count_of_org(&self, org_id: &str, used_since: i64) -> anyhow::Result<u64> {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM endpoint_sessions WHERE org_id = $1 AND used_at >= $2",
        )
        .bind(org_id)
        .bind(used_since)
        .fetch_one(&self.pool)
        .await
        .context("failed to count an organization's endpoint sessions")?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn purge_idle(&self, used_before: i64, batch: usize) -> anyhow::Result<u64> {
        let batch = i64::try_from(batch).unwrap_or(i64::MAX);
        let done = sqlx::query(
            "DELETE FROM endpoint_sessions WHERE id IN \
             (SELECT id FROM endpoint_sessions WHERE used_at < $1 LIMIT $2)",
        )
        .bind(used_before)
        .bind(batch)
        .execute(&self.pool)
        .await
        .context("failed to forget idle endpoint sessions")?;
        Ok(done.rows_affected())
    }
}
