//! Grants of calls in flight in the `org_slot_grants` table of the service's
//! PostgreSQL database, which every replica shares.
//!
//! A grant is taken in one transaction that holds an advisory lock of the
//! organization, so two replicas asking at once are served one after the
//! other and the grants never add up to more than the limit. Expiry is
//! timed by the database's clock, so replica clocks do not matter.

use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use sqlx::{AnyPool, Row as _};

use super::grants::{Ask, SlotGrants, grant};

/// The database's clock, in milliseconds since the Unix epoch.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The first key of the advisory locks of grants, so that they cannot meet
/// the locks other code takes (the migrator's are single 64-bit keys, which
/// PostgreSQL keeps apart from pairs).
const LOCK_SPACE: i32 = 0x5342_4f4c; // "SBOL"

/// The `org_slot_grants` table, or another table with its columns.
#[derive(Debug)]
pub struct PgSlotGrants {
    pool: AnyPool,
    ttl_ms: i64,
    table: &'static str,
}

impl PgSlotGrants {
    /// Grants of calls in flight in `pool`'s `org_slot_grants` table that
    /// expire `ttl` after their last renewal.
    pub fn new(pool: AnyPool, ttl: Duration) -> Self {
        Self::in_table(pool, ttl, "org_slot_grants")
    }

    /// Grants of something else counted per organization across replicas,
    /// in `table` (a name in the code, never an input), whose columns are
    /// `org_slot_grants`'s.
    pub fn in_table(pool: AnyPool, ttl: Duration, table: &'static str) -> Self {
        Self {
            pool,
            ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
            table,
        }
    }

    async fn take(&self, replica: &str, org: &str, ask: Ask) -> anyhow::Result<usize> {
        let table = self.table;
        let mut tx = self.pool.begin().await?;
        sqlx::query(&format!(
            "SELECT 1 FROM (SELECT pg_advisory_xact_lock({LOCK_SPACE}, hashtext($1))) AS locked"
        ))
        .bind(org)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(&format!(
            "DELETE FROM {table} WHERE org_id = $1 AND expires_at < {NOW_MS}"
        ))
        .bind(org)
        .execute(&mut *tx)
        .await?;
        let others: i64 = sqlx::query(&format!(
            "SELECT COALESCE(SUM(slots), 0)::BIGINT FROM {table} \
             WHERE org_id = $1 AND replica_id <> $2"
        ))
        .bind(org)
        .bind(replica)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let granted = grant(ask, usize::try_from(others).unwrap_or(usize::MAX));
        if granted == 0 {
            sqlx::query(&format!(
                "DELETE FROM {table} WHERE org_id = $1 AND replica_id = $2"
            ))
            .bind(org)
            .bind(replica)
            .execute(&mut *tx)
            .await?;
        } else {
            sqlx::query(&format!(
                "INSERT INTO {table} (org_id, replica_id, slots, expires_at) \
                 VALUES ($1, $2, $3, {NOW_MS} + $4) ON CONFLICT (org_id, replica_id) \
                 DO UPDATE SET slots = EXCLUDED.slots, expires_at = EXCLUDED.expires_at"
            ))
            .bind(org)
            .bind(replica)
            .bind(i64::try_from(granted).unwrap_or(i64::MAX))
            .bind(self.ttl_ms)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(granted)
    }

    async fn shrink_to(&self, replica: &str, org: &str, slots: usize) -> anyhow::Result<bool> {
        let table = self.table;
        // An update, never an insert: a grant that expired may have been
        // handed to other replicas, and only `take` may grant it again.
        let done = if slots == 0 {
            sqlx::query(&format!(
                "DELETE FROM {table} WHERE org_id = $1 AND replica_id = $2 \
                 AND expires_at >= {NOW_MS}"
            ))
            .bind(org)
            .bind(replica)
            .execute(&self.pool)
            .await?
        } else {
            sqlx::query(&format!(
                "UPDATE {table} SET slots = $3, expires_at = {NOW_MS} + $4 \
                 WHERE org_id = $1 AND replica_id = $2"
            ))
            .bind(org)
            .bind(replica)
            .bind(i64::try_from(slots).unwrap_or(i64::MAX))
            .bind(self.ttl_ms)
            .execute(&self.pool)
            .await?
        };
        Ok(done.rows_affected() == 1)
    }

    async fn renew_all(&self, replica: &str) -> anyhow::Result<Vec<String>> {
        let table = self.table;
        let rows = sqlx::query(&format!(
            "UPDATE {table} SET expires_at = {NOW_MS} + $2 \
             WHERE replica_id = $1 RETURNING org_id"
        ))
        .bind(replica)
        .bind(self.ttl_ms)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| row.try_get::<String, _>(0).map_err(Into::into))
            .collect()
    }
}

impl SlotGrants for PgSlotGrants {
    fn acquire<'a>(
        &'a self,
        replica: &'a str,
        org: &'a str,
        ask: Ask,
    ) -> BoxFuture<'a, anyhow::Result<usize>> {
        Box::pin(async move {
            self.take(replica, org, ask)
                .await
                .context("failed to take a grant of calls in flight")
        })
    }

    fn shrink<'a>(
        &'a self,
        replica: &'a str,
        org: &'a str,
        slots: usize,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(async move {
            self.shrink_to(replica, org, slots)
                .await
                .context("failed to shrink a grant of calls in flight")
        })
    }

    fn renew<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<String>>> {
        Box::pin(async move {
            self.renew_all(replica)
                .await
                .context("failed to renew the grants of calls in flight")
        })
    }

    fn release<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::query(&format!("DELETE FROM {} WHERE replica_id = $1", self.table))
                .bind(replica)
                .execute(&self.pool)
                .await
                .context("failed to give up the grants of calls in flight")?;
            Ok(())
        })
    }
}
