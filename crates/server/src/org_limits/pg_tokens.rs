//! The buckets of calls per second in the `org_rate_buckets` table of the
//! service's PostgreSQL database, which every replica shares.
//!
//! Tokens are taken in one transaction that locks the organization's row,
//! so two replicas taking at once are served one after the other and never
//! take the same tokens. Refill is timed by the database's clock, so
//! replica clocks do not matter.

use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use sqlx::{AnyPool, Row as _};

use super::tokens::{Taken, TokenAsk, TokenBuckets, refill, take};

/// The database's clock, in milliseconds since the Unix epoch.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The `org_rate_buckets` table.
#[derive(Debug)]
pub struct PgTokenBuckets {
    pool: AnyPool,
}

impl PgTokenBuckets {
    /// Buckets in `pool`'s table.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    async fn take_from(&self, org: &str, ask: TokenAsk) -> anyhow::Result<Taken> {
        let burst = f64::from(ask.burst.get());
        let mut tx = self.pool.begin().await?;
        // Creates a full bucket, or locks the one there; either way returns
        // its tokens, when they were counted and the database's now (read
        // after the lock, so never before another replica's count).
        let row = sqlx::query(&format!(
            "INSERT INTO org_rate_buckets AS b (org_id, tokens, counted_at) \
             VALUES ($1, $2, {NOW_MS}) \
             ON CONFLICT (org_id) DO UPDATE SET org_id = b.org_id \
             RETURNING b.tokens, b.counted_at, {NOW_MS}"
        ))
        .bind(org)
        .bind(burst)
        .fetch_one(&mut *tx)
        .await?;
        let (tokens, counted_at, now): (f64, i64, i64) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        // A new bucket holds the burst already; a lowered burst caps an old one.
        let elapsed = Duration::from_millis(u64::try_from(now - counted_at).unwrap_or(0));
        let held = refill(Some(tokens), elapsed, ask);
        let (taken, left) = take(held, ask);
        sqlx::query(
            "UPDATE org_rate_buckets SET tokens = $2, counted_at = GREATEST(counted_at, $3) \
             WHERE org_id = $1",
        )
        .bind(org)
        .bind(left)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(taken)
    }
}

impl TokenBuckets for PgTokenBuckets {
    fn take<'a>(&'a self, org: &'a str, ask: TokenAsk) -> BoxFuture<'a, anyhow::Result<Taken>> {
        Box::pin(async move {
            self.take_from(org, ask)
                .await
                .context("failed to take tokens of calls per second")
        })
    }
}
