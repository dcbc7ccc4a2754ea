//! The MCP endpoint's shared sessions in SQL (SQLite or PostgreSQL through
//! `sqlx::Any`), one row each.

use anyhow::Context as _;
use async_trait::async_trait;
use sqlx::{AnyPool, Row};

use crate::domain::endpoint_session::{
    EndpointSessionStore, RelayKind, Relayed, SessionOwner, StoredSession,
};

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
        sqlx::query("DELETE FROM endpoint_session_answers WHERE created_at < $1")
            .bind(used_before)
            .execute(&self.pool)
            .await
            .context("failed to forget answers no replica took")?;
        Ok(done.rows_affected())
    }

    async fn relay(&self, message: &Relayed, max_waiting: usize, now: i64) -> anyhow::Result<bool> {
        let kind = message.kind.as_str();
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM endpoint_session_answers WHERE session_id = $1 AND kind = $2",
        )
        .bind(&message.session_id)
        .bind(kind)
        .fetch_one(&self.pool)
        .await
        .context("failed to count a session's relayed messages")?;
        if usize::try_from(waiting).unwrap_or(usize::MAX) >= max_waiting {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO endpoint_session_answers \
             (id, replica, session_id, message_json, created_at, kind) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(&message.replica)
        .bind(&message.session_id)
        .bind(&message.message_json)
        .bind(now)
        .bind(kind)
        .execute(&self.pool)
        .await
        .context("failed to relay a message")?;
        Ok(true)
    }

    async fn take_relayed(&self, replica: &str, limit: usize) -> anyhow::Result<Vec<Relayed>> {
        let rows = sqlx::query(
            "SELECT id, session_id, message_json, kind FROM endpoint_session_answers \
             WHERE replica = $1 ORDER BY created_at LIMIT $2",
        )
        .bind(replica)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .context("failed to read relayed messages")?;
        let mut taken = Vec::with_capacity(rows.len());
        for row in rows {
            let id: String = row.try_get("id")?;
            let deleted = sqlx::query("DELETE FROM endpoint_session_answers WHERE id = $1")
                .bind(&id)
                .execute(&self.pool)
                .await
                .context("failed to take a relayed message")?;
            let kind: String = row.try_get("kind")?;
            // Taken once, whichever poll gets there first.
            if deleted.rows_affected() == 1
                && let Some(kind) = RelayKind::parse(&kind)
            {
                taken.push(Relayed {
                    kind,
                    replica: replica.to_owned(),
                    session_id: row.try_get("session_id")?,
                    message_json: row.try_get("message_json")?,
                });
            }
        }
        Ok(taken)
    }

    async fn hold_stream(&self, id: &str, replica: &str) -> anyhow::Result<()> {
        sqlx::query("UPDATE endpoint_sessions SET stream_replica = $2 WHERE id = $1")
            .bind(id)
            .bind(replica)
            .execute(&self.pool)
            .await
            .context("failed to record where a session's stream is held")?;
        Ok(())
    }

    async fn stream_holder(&self, id: &str) -> anyhow::Result<Option<String>> {
        let holder: Option<Option<String>> =
            sqlx::query_scalar("SELECT stream_replica FROM endpoint_sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .context("failed to read where a session's stream is held")?;
        Ok(holder.flatten())
    }
}
