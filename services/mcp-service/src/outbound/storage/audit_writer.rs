//! Group commit for the audit trail: the call path hands its record to one
//! writer task per replica through a bounded queue and goes on; the writer
//! appends whatever has queued up meanwhile in one transaction. A call then
//! pays for a queue send, not for a database commit, and a busy replica
//! pays one commit for many calls. Once a record arrives the writer waits a
//! moment (the batch wait) for more before it appends: a transaction is
//! several statements, and without the wait a replica whose calls come
//! just further apart than one append takes pays a transaction per call. A
//! flush does not wait.

use std::{sync::Arc, time::Duration};

use tokio::time::Instant;

use anyhow::Context as _;
use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use super::audit::{AppendFailed, SqlAuditLog};
use crate::domain::audit::{AuditEvent, AuditLog, AuditQuery, AuditRecord, ChainAnchor};

/// How long an append waits for room in a full queue before it fails (and
/// the event is logged instead): a store that cannot keep up must not hold
/// calls for longer.
const QUEUE_WAIT: Duration = Duration::from_secs(1);

/// How many times the writer tries one batch whose append failed before
/// writing anything: a database restart or a moment of lock contention
/// must not open a gap in the trail.
const APPEND_ATTEMPTS: u32 = 4;

/// The pause before the second try; each later pause is four times the one
/// before (0.1 s, 0.4 s, 1.6 s: about 2 s in all before the events are
/// given up).
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(100);

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
    /// one transaction appends at most `batch.max` of them, gathered for at
    /// most `batch.wait` after the first.
    pub fn start(store: Arc<SqlAuditLog>, capacity: usize, batch: BatchShape) -> Self {
        let (queue, receiver) = mpsc::channel(capacity.max(1));
        let batch = BatchShape {
            max: batch.max.max(1),
            ..batch
        };
        tokio::spawn(write(store.clone(), receiver, batch));
        Self { store, queue }
    }
}

/// How the writer gathers a batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchShape {
    /// Most records one transaction appends.
    pub max: usize,
    /// Longest the first record of a batch waits for more.
    pub wait: Duration,
}

/// The writer: takes what is queued (gathering for the batch wait), appends
/// it, answers the flushes that were queued behind it; ends when every
/// sender is gone and the queue is drained.
async fn write(store: Arc<SqlAuditLog>, mut receiver: mpsc::Receiver<Message>, batch: BatchShape) {
    let mut messages = Vec::with_capacity(batch.max);
    while receiver.recv_many(&mut messages, batch.max).await > 0 {
        gather(&mut receiver, &mut messages, batch).await;
        let mut records = Vec::with_capacity(messages.len());
        let mut flushes = Vec::new();
        for message in messages.drain(..) {
            match message {
                Message::Append(record) => records.push(*record),
                Message::Flush(done) => flushes.push(done),
            }
        }
        if !records.is_empty() {
            append(&store, records).await;
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Adds to `messages` what arrives within the batch wait, until the batch
/// is full or a flush asks for what is there.
async fn gather(
    receiver: &mut mpsc::Receiver<Message>,
    messages: &mut Vec<Message>,
    batch: BatchShape,
) {
    if batch.wait.is_zero() {
        return;
    }
    let deadline = Instant::now() + batch.wait;
    let flushing = |messages: &[Message]| messages.iter().any(|m| matches!(m, Message::Flush(_)));
    while messages.len() < batch.max && !flushing(messages) {
        let room = batch.max - messages.len();
        match tokio::time::timeout_at(deadline, receiver.recv_many(messages, room)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Appends `records`, again after a pause while the store failed before
/// writing anything (a dropped connection, a lock or pool timeout), at most
/// [`APPEND_ATTEMPTS`] times; a failed commit is not repeated, since its
/// events may be stored already. What is not appended is logged with its
/// count (each event was logged whole when it was recorded).
async fn append(store: &SqlAuditLog, mut records: Vec<AuditRecord>) {
    let count = records.len();
    let mut pause = FIRST_RETRY_PAUSE;
    for attempt in 1..=APPEND_ATTEMPTS {
        let last = attempt == APPEND_ATTEMPTS;
        let this_try = if last {
            std::mem::take(&mut records)
        } else {
            records.clone()
        };
        let error = match store.append_all(this_try).await {
            Ok(()) => return,
            Err(AppendFailed::NotWritten(error)) if !last => {
                tracing::warn!(
                    target: "audit",
                    events = count,
                    attempt,
                    error = format!("{error:#}"),
                    "audit append failed before writing; trying again"
                );
                tokio::time::sleep(pause).await;
                pause *= 4;
                continue;
            }
            Err(error) => error,
        };
        tracing::error!(
            target: "audit",
            events = count,
            attempts = attempt,
            error = format!("{error:#}"),
            "audit append failed; the events are in the log only"
        );
        return;
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
