//! Group commit for the audit trail: the call path hands its record to one
//! writer task per replica through a bounded queue and goes on; the writer
//! appends whatever has queued up meanwhile in one transaction. A call then
//! pays for a queue send, not for a database commit, and a busy replica
//! pays one commit for many calls.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use super::audit::SqlAuditLog;
use crate::domain::audit::{AuditEvent, AuditLog, AuditQuery, AuditRecord, ChainAnchor};

/// How long an append waits for room in a full queue before it fails (and
/// the event is logged instead): a store that cannot keep up must not hold
/// calls for longer.
const QUEUE_WAIT: Duration = Duration::from_secs(1);

enum Message {
    Append(Box<AuditRecord>),
    Flush(oneshot::Sender<()>),
}

/// [`AuditLog`] whose appends are group-committed by a writer task.
#[derive(Debug, Clone)]
pub struct BatchingAuditLog {
    store: Arc<SqlAuditLog>,
    queue: mpsc::Sender<Message>,
}

impl BatchingAuditLog {
    /// Starts the writer over `store`: at most `capacity` records wait, and
    /// one transaction appends at most `max_batch`.
    pub fn start(store: Arc<SqlAuditLog>, capacity: usize, max_batch: usize) -> Self {
        let (queue, receiver) = mpsc::channel(capacity.max(1));
        tokio::spawn(write(store.clone(), receiver, max_batch.max(1)));
        Self { store, queue }
    }
}

/// The writer: takes what is queued, appends it, answers the flushes that
/// were queued behind it; ends when every sender is gone and the queue is
/// drained.
async fn write(store: Arc<SqlAuditLog>, mut receiver: mpsc::Receiver<Message>, max_batch: usize) {
    let mut messages = Vec::with_capacity(max_batch);
    while receiver.recv_many(&mut messages, max_batch).await > 0 {
        let mut records = Vec::with_capacity(messages.len());
        let mut flushes = Vec::new();
        for message in messages.drain(..) {
            match message {
                Message::Append(record) => records.push(*record),
                Message::Flush(done) => flushes.push(done),
            }
        }
        if !records.is_empty() {
            let count = records.len();
            if let Err(error) = store.append_all(records).await {
                tracing::error!(
                    target: "audit",
                    events = count,
                    error = format!("{error:#}"),
                    "audit append failed; the events are in the log only"
                );
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

#[async_trait]
impl AuditLog for BatchingAuditLog {
    async fn append(&self, record: AuditRecord) -> anyhow::Result<()> {
        self.queue
            .send_timeout(Message::Append(Box::new(record)), QUEUE_WAIT)
            .await
            .map_err(|_| anyhow::anyhow!("the audit queue is full"))
    }

    async fn flush(&self) -> anyhow::Result<()> {
        let (done, waited) = oneshot::channel();
        self.queue
            .send(Message::Flush(done))
            .await
            .map_err(|_| anyhow::anyhow!("the audit writer has stopped"))?;
        waited.await.context("the audit writer has stopped")
    }

    async fn list(&self, org: &str, query: &AuditQuery) -> anyhow::Result<Vec<AuditEvent>> {
        self.store.list(org, query).await
    }

    async fn bounds(&self, org: &str) -> anyhow::Result<ChainAnchor> {
        self.store.bounds(org).await
    }

    async fn chain_page(
        &self,
        org: &str,
        after_sequence: i64,
        limit: usize,
    ) -> anyhow::Result<Vec<AuditEvent>> {
        self.store.chain_page(org, after_sequence, limit).await
    }

    async fn purge(&self, before_millis: i64, batch: usize) -> anyhow::Result<u64> {
        self.store.purge(before_millis, batch).await
    }
}
