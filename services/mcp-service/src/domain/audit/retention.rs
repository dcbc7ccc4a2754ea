//! Retention: events older than the kept period are removed in bounded
//! batches, oldest of each chain first; the chain remembers the last one
//! removed, so verification starts from the first kept event.

use std::{sync::Arc, time::Duration};

use super::ports::AuditLog;

/// What the purge keeps and how it runs.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// How long events are kept.
    pub keep: Duration,
    /// How often the purge runs.
    pub interval: Duration,
    /// Most events one purge transaction removes.
    pub batch: usize,
}

impl Retention {
    /// Removes old events every `interval`, a batch at a time until none is
    /// left, until the task is dropped with its runtime.
    pub fn spawn(self, log: Arc<dyn AuditLog>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(self.interval.max(Duration::from_millis(10)));
            loop {
                ticks.tick().await;
                self.purge(log.as_ref()).await;
            }
        })
    }

    /// One round: batches until a batch comes back short.
    pub async fn purge(&self, log: &dyn AuditLog) {
        let keep = i64::try_from(self.keep.as_millis()).unwrap_or(i64::MAX);
        let before = switchboard_db::now_millis().saturating_sub(keep);
        loop {
            match log.purge(before, self.batch).await {
                Ok(removed) if removed >= u64::try_from(self.batch).unwrap_or(u64::MAX) => {}
                Ok(removed) => {
                    if removed > 0 {
                        tracing::info!(target: "audit", removed, "old audit events removed");
                    }
                    return;
                }
                Err(error) => {
                    tracing::warn!(target: "audit", error = format!("{error:#}"), "audit purge failed");
                    return;
                }
            }
        }
    }
}
