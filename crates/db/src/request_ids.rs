//! Idempotency keys (`request_id`) of creating requests, kept in the
//! `request_ids` table of the service's database.
//!
//! A key is scoped by organization and method. The first request with a key
//! claims it and records its response; a repeat with the same fingerprint gets
//! that response back, one with another fingerprint is told the key is taken.
//! Rows are forgotten after the idempotency window, so the table stays as
//! large as the requests of one window.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use anyhow::Context as _;
use sqlx::{AnyPool, Row as _};

use crate::now_millis;

/// A claim left unfinished this long belongs to a request whose process
/// stopped; a repeat may take it over. Creating requests finish in seconds
/// and a run records its id as soon as it starts, so this is generous.
const PENDING_LEASE: Duration = Duration::from_secs(300);

/// One claim in this many also clears every expired row (the index on
/// `created_at` keeps that cheap).
const PRUNE_EVERY: u64 = 256;

/// The idempotency window when none is configured.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// Which request a key belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKey {
    /// The caller's organization.
    pub org_id: String,
    /// The RPC, for example `CreateAgent`.
    pub method: &'static str,
    /// The caller's idempotency key.
    pub request_id: String,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is new: serve the request, then [`RequestIds::finish`] it (or
    /// [`RequestIds::forget`] it when the request failed).
    First,
    /// The same request finished before: this is its recorded response.
    Done(Vec<u8>),
    /// The same request is being served now.
    Pending,
    /// The key belongs to a different request.
    Reused,
}

/// The `request_ids` table.
#[derive(Debug)]
pub struct RequestIds {
    pool: AnyPool,
    window: Duration,
    claims: AtomicU64,
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl RequestIds {
    /// Keys in `pool`'s `request_ids` table, kept for `window`.
    pub fn new(pool: AnyPool, window: Duration) -> Self {
        Self {
            pool,
            window,
            claims: AtomicU64::new(0),
        }
    }

    /// Claims `key` for a request with `fingerprint`, or says who holds it.
    pub async fn claim(&self, key: &RequestKey, fingerprint: &str) -> anyhow::Result<Claim> {
        let now = now_millis();
        self.clear_expired(key, now).await?;
        let inserted = sqlx::query(
            "INSERT INTO request_ids (org_id, method, request_id, fingerprint, response, created_at) \
             VALUES ($1, $2, $3, $4, NULL, $5) ON CONFLICT DO NOTHING",
        )
        .bind(&key.org_id)
        .bind(key.method)
        .bind(&key.request_id)
        .bind(fingerprint)
        .bind(now)
        .execute(&self.pool)
        .await
        .context("failed to claim a request id")?;
        if inserted.rows_affected() == 1 {
            return Ok(Claim::First);
        }
        self.holder(key, fingerprint).await
    }

    /// Removes expired keys (all of them now and then, `key` every time) and
    /// `key` when the request that claimed it left it pending too long, so
    /// that only a live claim can stand in the way of this one.
    async fn clear_expired(&self, key: &RequestKey, now: i64) -> anyhow::Result<()> {
        let expired_before = now.saturating_sub(millis(self.window));
        if self
            .claims
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_EVERY)
        {
            sqlx::query("DELETE FROM request_ids WHERE created_at < $1")
                .bind(expired_before)
                .execute(&self.pool)
                .await
                .context("failed to prune request ids")?;
        }
        let abandoned_before = now.saturating_sub(millis(PENDING_LEASE));
        sqlx::query(
            "DELETE FROM request_ids WHERE org_id = $1 AND method = $2 AND request_id = $3 \
             AND (created_at < $4 OR (response IS NULL AND created_at < $5))",
        )
        .bind(&key.org_id)
        .bind(key.method)
        .bind(&key.request_id)
        .bind(expired_before)
        .bind(abandoned_before)
        .execute(&self.pool)
        .await
        .context("failed to clear an expired request id")?;
        Ok(())
    }

    /// What a request with `fingerprint` finds when another claimed `key` first.
    async fn holder(&self, key: &RequestKey, fingerprint: &str) -> anyhow::Result<Claim> {
        let row = sqlx::query(
            "SELECT fingerprint, response FROM request_ids \
             WHERE org_id = $1 AND method = $2 AND request_id = $3",
        )
        .bind(&key.org_id)
        .bind(key.method)
        .bind(&key.request_id)
        .fetch_optional(&self.pool)
        .await
        .context("failed to read a request id")?;
        let Some(row) = row else {
            // Forgotten between the insert and the read: its request failed
            // a moment ago, and the caller may simply try again.
            return Ok(Claim::Pending);
        };
        let held_by: String = row.try_get("fingerprint")?;
        if held_by != fingerprint {
            return Ok(Claim::Reused);
        }
        let response: Option<Vec<u8>> = row.try_get("response")?;
        Ok(response.map_or(Claim::Pending, Claim::Done))
    }

    /// Records the response of the request that claimed `key`.
    pub async fn finish(&self, key: &RequestKey, response: &[u8]) -> anyhow::Result<()> {
        sqlx::query(
            "UPDATE request_ids SET response = $4 \
             WHERE org_id = $1 AND method = $2 AND request_id = $3",
        )
        .bind(&key.org_id)
        .bind(key.method)
        .bind(&key.request_id)
        .bind(response.to_vec())
        .execute(&self.pool)
        .await
        .context("failed to record a response for a request id")?;
        Ok(())
    }

    /// Releases an unfinished claim (its request failed), so that a repeat
    /// is served afresh.
    pub async fn forget(&self, key: &RequestKey) -> anyhow::Result<()> {
        sqlx::query(
            "DELETE FROM request_ids \
             WHERE org_id = $1 AND method = $2 AND request_id = $3 AND response IS NULL",
        )
        .bind(&key.org_id)
        .bind(key.method)
        .bind(&key.request_id)
        .execute(&self.pool)
        .await
        .context("failed to forget a request id")?;
        Ok(())
    }
}
