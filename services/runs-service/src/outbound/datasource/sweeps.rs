//! Deleting a deleted thread's objects, and the sweep that finishes a
//! deletion that failed or was cut short (see `objects.rs` for why the
//! record is written before the thread's rows are deleted).

use anyhow::Context as _;
use sqlx::Row as _;

use super::SqlDataSources;
use crate::domain::ids::ThreadId;

/// Records handled by one sweep.
const SWEEP_BATCH: i64 = 100;

impl SqlDataSources {
    /// Records that `thread`'s objects must go once its row is gone.
    pub(super) async fn mark_for_sweep(&self, thread: ThreadId) -> anyhow::Result<()> {
        let Some(objects) = &self.objects else {
            return Ok(());
        };
        let inserted = sqlx::query(
            "INSERT INTO data_source_object_sweeps (thread_id, object_prefix, created_at) \
             VALUES ($1, $2, $3)",
        )
        .bind(thread.to_string())
        .bind(objects.thread_prefix(thread))
        .bind(switchboard_db::now_millis())
        .execute(&self.store.pool)
        .await;
        match inserted {
            // A deletion tried before left it.
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(()),
            other => other
                .map(drop)
                .context("failed to record a thread's objects for deletion"),
        }
    }

    /// Deletes `thread`'s objects now that its rows are gone, and the
    /// record; a failure leaves the record to the sweep.
    pub(super) async fn delete_thread_objects(&self, thread: ThreadId) {
        let Some(objects) = &self.objects else {
            return;
        };
        let prefix = objects.thread_prefix(thread);
        match self.sweep_one(&thread.to_string(), &prefix).await {
            Ok(deleted) => tracing::info!(%thread, objects = deleted, "thread's objects deleted"),
            Err(error) => tracing::warn!(
                %thread,
                error = %format!("{error:#}"),
                "failed to delete a thread's objects; the sweep retries"
            ),
        }
    }

    /// Deletes the objects of threads whose deletion left them (their
    /// record is there and their row is gone); how many objects it deleted.
    /// A record whose thread still exists (its deletion failed) is left.
    pub async fn sweep_objects(&self) -> anyhow::Result<usize> {
        if self.objects.is_none() {
            return Ok(0);
        }
        let rows = sqlx::query(
            "SELECT s.thread_id, s.object_prefix FROM data_source_object_sweeps s \
             WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = s.thread_id) \
             ORDER BY s.created_at LIMIT $1",
        )
        .bind(SWEEP_BATCH)
        .fetch_all(&self.store.pool)
        .await
        .context("failed to read the object sweep records")?;
        let mut deleted = 0;
        for row in &rows {
            let thread: String = row.try_get("thread_id")?;
            let prefix: String = row.try_get("object_prefix")?;
            deleted += self.sweep_one(&thread, &prefix).await?;
        }
        Ok(deleted)
    }

    /// Deletes the objects under `prefix`, then the record of `thread`.
    async fn sweep_one(&self, thread: &str, prefix: &str) -> anyhow::Result<usize> {
        let Some(objects) = &self.objects else {
            return Ok(0);
        };
        let deleted = objects.delete_prefix(prefix).await?;
        sqlx::query("DELETE FROM data_source_object_sweeps WHERE thread_id = $1")
            .bind(thread)
            .execute(&self.store.pool)
            .await
            .context("failed to remove an object sweep record")?;
        Ok(deleted)
    }
}
