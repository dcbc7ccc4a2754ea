//! The audit log port: appends to each organization's chain, and the reads
//! `AuditService` and the retention purge need.

use async_trait::async_trait;

use super::{
    chain::ChainBounds,
    record::{AuditEvent, AuditOutcome, AuditRecord},
};

/// The bounds of one chain, under the name the adapters use.
pub type ChainAnchor = ChainBounds;

/// Which events to list, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Events at or after this time (Unix milliseconds).
    pub start_millis: Option<i64>,
    /// Events before this time.
    pub end_millis: Option<i64>,
    /// Only this user's.
    pub subject: Option<String>,
    /// Only this integration's.
    pub integration_id: Option<String>,
    /// Only this target.
    pub target: Option<String>,
    /// Only these outcomes (any when empty).
    pub outcomes: Vec<AuditOutcome>,
    /// Only events before this sequence (the page token).
    pub before_sequence: Option<i64>,
    /// At most this many.
    pub limit: usize,
}

/// Each organization's append-only chain of audit events.
#[async_trait]
pub trait AuditLog: Send + Sync + 'static {
    /// Appends `record` to its organization's chain. Appends of one
    /// organization are serialized across replicas, so the chain never
    /// forks. An adapter may batch: the record is then durable once
    /// [`AuditLog::flush`] returns.
    async fn append(&self, record: AuditRecord) -> anyhow::Result<()>;

    /// Waits until every record appended before is stored.
    async fn flush(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Events of `org` matching `query`, newest first.
    async fn list(&self, org: &str, query: &AuditQuery) -> anyhow::Result<Vec<AuditEvent>>;

    /// Where `org`'s kept events start and end.
    async fn bounds(&self, org: &str) -> anyhow::Result<ChainBounds>;

    /// Up to `limit` events of `org` after `after_sequence`, oldest first.
    async fn chain_page(
        &self,
        org: &str,
        after_sequence: i64,
        limit: usize,
    ) -> anyhow::Result<Vec<AuditEvent>>;

    /// Removes up to `batch` events older than `before_millis` (of every
    /// organization, oldest of each chain first), remembering the last one
    /// removed of each chain; returns how many were removed.
    async fn purge(&self, before_millis: i64, batch: usize) -> anyhow::Result<u64>;
}
