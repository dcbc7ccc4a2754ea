//! The check of a chain while it changes under it: events appended by other
//! replicas and events removed by the retention purge between the reads are
//! no break, and a head moved back still is.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use switchboard_auth::Principal;

use super::{
    chain::{ChainBounds, link},
    ports::{AuditLog, AuditQuery},
    record::{AuditAction, AuditEvent, AuditOutcome, AuditRecord},
    trail::AuditTrail,
};

/// What happens to the chain just before a page of it is read.
#[derive(Clone, Copy)]
enum Meanwhile {
    /// Another replica appends an event before every page read.
    Appended,
    /// The purge removes the two oldest events before the first page read.
    Purged,
    /// The head is moved back one event before the first page read.
    HeadMovedBack,
}

struct ChangingLog {
    state: Mutex<State>,
    meanwhile: Meanwhile,
}

#[derive(Default)]
struct State {
    events: Vec<AuditEvent>,
    bounds: ChainBounds,
    pages_read: usize,
}

impl State {
    fn append(&mut self) {
        let caller = Principal::new("org", "alice", vec!["member".to_owned()]);
        let record = AuditRecord::by(&caller, AuditAction::ToolCall, AuditOutcome::Ok);
        let previous = self.events.last().map(|e| (e.sequence, e.hash.as_str()));
        let event = link(previous, record);
        self.bounds.head_sequence = event.sequence;
        self.bounds.head_hash.clone_from(&event.hash);
        self.events.push(event);
    }

    fn purge(&mut self, count: usize) {
        let removed: Vec<AuditEvent> = self.events.drain(..count).collect();
        if let Some(last) = removed.last() {
            self.bounds.purged_through = last.sequence;
            self.bounds.purged_hash.clone_from(&last.hash);
        }
    }
}

impl ChangingLog {
    fn with(events: usize, meanwhile: Meanwhile) -> Arc<Self> {
        let mut state = State::default();
        for _ in 0..events {
            state.append();
        }
        Arc::new(Self {
            state: Mutex::new(state),
            meanwhile,
        })
    }
}

#[async_trait]
impl AuditLog for ChangingLog {
    async fn append(&self, _record: AuditRecord) -> anyhow::Result<()> {
        unreachable!("the check only reads")
    }

    async fn list(&self, _org: &str, _query: &AuditQuery) -> anyhow::Result<Vec<AuditEvent>> {
        Ok(Vec::new())
    }

    async fn bounds(&self, _org: &str) -> anyhow::Result<ChainBounds> {
        Ok(self.state.lock().expect("log").bounds.clone())
    }

    async fn chain_page(
        &self,
        _org: &str,
        after_sequence: i64,
        limit: usize,
    ) -> anyhow::Result<Vec<AuditEvent>> {
        let mut state = self.state.lock().expect("log");
        let first = state.pages_read == 0;
        state.pages_read += 1;
        match self.meanwhile {
            Meanwhile::Appended => state.append(),
            Meanwhile::Purged if first => state.purge(2),
            Meanwhile::HeadMovedBack if first => {
                let kept = state.events.len() - 1;
                state.bounds.head_sequence = state.events[kept - 1].sequence;
                state.bounds.head_hash = state.events[kept - 1].hash.clone();
            }
            _ => {}
        }
        Ok(state
            .events
            .iter()
            .filter(|e| e.sequence > after_sequence)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn purge(&self, _before_millis: i64, _batch: usize) -> anyhow::Result<u64> {
        Ok(0)
    }
}

fn admin() -> Principal {
    Principal::new("org", "root", vec!["admin".to_owned()])
}

#[tokio::test]
async fn events_appended_while_the_chain_is_read_are_no_break() {
    let log = ChangingLog::with(5, Meanwhile::Appended);
    let verdict = AuditTrail::new(log.clone())
        .verify(&admin())
        .await
        .expect("checked");
    assert_eq!(verdict.broken, None, "{verdict:?}");
    assert!(verdict.events_checked >= 6, "{verdict:?}");
}

#[tokio::test]
async fn events_purged_while_the_chain_is_read_are_no_break() {
    let log = ChangingLog::with(5, Meanwhile::Purged);
    let verdict = AuditTrail::new(log)
        .verify(&admin())
        .await
        .expect("checked");
    assert_eq!(verdict.broken, None, "{verdict:?}");
    assert_eq!(verdict.events_checked, 3, "{verdict:?}");
}

#[tokio::test]
async fn a_head_moved_back_is_still_a_break() {
    let log = ChangingLog::with(5, Meanwhile::HeadMovedBack);
    let verdict = AuditTrail::new(log)
        .verify(&admin())
        .await
        .expect("checked");
    let (sequence, problem) = verdict.broken.expect("broken");
    assert_eq!(sequence, 5, "{problem}");
    assert!(problem.contains("past the chain's head"), "{problem}");
}
