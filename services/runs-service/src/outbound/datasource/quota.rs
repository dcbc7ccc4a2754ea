//! Each organization's share of the data-source store: the thread's
//! organization, the CSV bytes its data sources hold, and the refusal of an
//! import past its limit.

use anyhow::Context as _;
use sqlx::Row as _;

use super::SqlDataSources;
use crate::domain::{datasource::ImportError, ids::ThreadId};

impl SqlDataSources {
    /// The organization of `thread_id`, if the thread exists.
    pub(super) async fn org_of(&self, thread_id: ThreadId) -> anyhow::Result<Option<String>> {
        sqlx::query("SELECT org_id FROM threads WHERE id = $1")
            .bind(thread_id.to_string())
            .fetch_optional(&self.store.pool)
            .await
            .context("failed to read the thread's organization")?
            .map(|row| row.try_get("org_id"))
            .transpose()
            .context("failed to read the thread's organization")
    }

    /// The CSV bytes `org`'s data sources hold.
    async fn org_usage(&self, org: &str) -> anyhow::Result<u64> {
        let used: i64 = sqlx::query(
            "SELECT CAST(COALESCE(SUM(d.size_bytes), 0) AS BIGINT) AS used FROM data_sources d \
             JOIN threads t ON t.id = d.thread_id WHERE t.org_id = $1",
        )
        .bind(org)
        .fetch_one(&self.store.pool)
        .await
        .context("failed to read the organization's data source bytes")?
        .try_get("used")
        .context("failed to read the organization's data source bytes")?;
        Ok(u64::try_from(used).unwrap_or(0))
    }

    /// Refuses the import of `size` bytes when `org`'s data sources would
    /// hold more than the limit. Imports of one organization run at most
    /// [`Capacity::concurrent_work_per_org`] at once, so concurrent ones can
    /// pass it by at most that many files.
    pub(super) async fn check_org_quota(&self, org: &str, size: usize) -> Result<(), ImportError> {
        let used = self.org_usage(org).await.map_err(ImportError::Storage)?;
        let size = size as u64;
        let limit = self
            .own_org_bytes
            .get(org)
            .copied()
            .unwrap_or(self.org_bytes);
        if used.saturating_add(size) > limit {
            return Err(ImportError::OrgQuotaExceeded { limit, used, size });
        }
        Ok(())
    }
}
