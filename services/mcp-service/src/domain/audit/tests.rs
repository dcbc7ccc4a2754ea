use switchboard_auth::Principal;

use super::{
    chain::{ChainBounds, Verifier, event_hash, link},
    record::{AuditAction, AuditEvent, AuditOutcome, AuditRecord},
};

fn record(target: &str) -> AuditRecord {
    let caller = Principal::new("org", "alice", vec!["member".to_owned()]);
    AuditRecord::by(&caller, AuditAction::ToolCall, AuditOutcome::Ok).target(target)
}

fn chain(length: usize) -> Vec<AuditEvent> {
    let mut events: Vec<AuditEvent> = Vec::new();
    for index in 0..length {
        let previous = events.last().map(|e| (e.sequence, e.hash.as_str()));
        events.push(link(previous, record(&format!("tool{index}"))));
    }
    events
}

fn bounds_of(events: &[AuditEvent]) -> ChainBounds {
    let last = events.last();
    ChainBounds {
        purged_through: 0,
        purged_hash: String::new(),
        head_sequence: last.map_or(0, |e| e.sequence),
        head_hash: last.map(|e| e.hash.clone()).unwrap_or_default(),
    }
}

fn verify(bounds: ChainBounds, events: &[AuditEvent]) -> Option<(i64, String)> {
    let mut verifier = Verifier::new(&bounds);
    for event in events {
        verifier.check(event);
    }
    verifier.finish(&bounds).broken
}

#[test]
fn field_boundaries_cannot_be_moved() {
    let mut one = record("ab");
    one.reason = "c".to_owned();
    let mut two = record("a");
    two.reason = "bc".to_owned();
    assert_ne!(event_hash(1, &one, ""), event_hash(1, &two, ""));
    let mut none = record("a");
    none.duration_micros = None;
    let mut zero = record("a");
    zero.duration_micros = Some(0);
    zero.time_millis = none.time_millis;
    assert_ne!(event_hash(1, &none, ""), event_hash(1, &zero, ""));
}

#[test]
fn an_untouched_chain_verifies() {
    let events = chain(5);
    assert_eq!(verify(bounds_of(&events), &events), None);
    assert_eq!(verify(ChainBounds::default(), &[]), None);
}

#[test]
fn an_edited_event_is_found_at_its_sequence() {
    let mut events = chain(5);
    let bounds = bounds_of(&events);
    events[2].record.outcome = AuditOutcome::Denied;
    let (sequence, problem) = verify(bounds, &events).expect("broken");
    assert_eq!(sequence, 3);
    assert!(problem.contains("hash"), "{problem}");
}

#[test]
fn a_removed_event_is_found_at_its_sequence() {
    let mut events = chain(5);
    let bounds = bounds_of(&events);
    events.remove(1);
    assert_eq!(verify(bounds, &events).map(|b| b.0), Some(2));
}

#[test]
fn removing_the_newest_events_is_found() {
    let mut events = chain(5);
    let bounds = bounds_of(&events);
    events.truncate(3);
    assert_eq!(verify(bounds, &events).map(|b| b.0), Some(4));
}

#[test]
fn a_purged_chain_verifies_from_its_first_kept_event() {
    let events = chain(5);
    let mut bounds = bounds_of(&events);
    bounds.purged_through = 2;
    bounds.purged_hash.clone_from(&events[1].hash);
    assert_eq!(verify(bounds.clone(), &events[2..]), None);
    assert_eq!(verify(bounds, &events[3..]).map(|b| b.0), Some(3));
}

#[test]
fn stored_names_parse_back() {
    for action in AuditAction::ALL {
        assert_eq!(AuditAction::parse(action.as_str()), Some(action));
    }
    for outcome in AuditOutcome::ALL {
        assert_eq!(AuditOutcome::parse(outcome.as_str()), Some(outcome));
    }
}
