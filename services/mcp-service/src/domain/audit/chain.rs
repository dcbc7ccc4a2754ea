//! The chain rule: each event's hash is SHA-256 over its canonical form,
//! which ends with the previous event's hash, so that changing or removing
//! any stored event breaks every link after it.
//!
//! The canonical form is a fixed sequence of length-prefixed fields (an
//! 8-byte big-endian length, then the UTF-8 bytes), numbers written in
//! decimal and an absent duration as an empty field. Length prefixes make
//! it unambiguous whatever a field holds: no separator or quote in a tool
//! name, a reason or the arguments can move bytes from one field to the
//! next, which a joined or escaped text could allow. JSON would work too,
//! but would tie the hash to one serializer's escaping.

use sha2::{Digest as _, Sha256};

use super::record::{AuditEvent, AuditRecord};

/// Marks the version of the canonical form; a new form gets a new tag.
const FORM: &str = "switchboard.audit.v1";

/// The hash (hex) of `record` at `sequence` after `previous_hash`.
pub fn event_hash(sequence: i64, record: &AuditRecord, previous_hash: &str) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        let length = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        hasher.update(length.to_be_bytes());
        hasher.update(bytes);
    };
    field(FORM.as_bytes());
    field(record.org_id.as_bytes());
    field(sequence.to_string().as_bytes());
    field(record.time_millis.to_string().as_bytes());
    field(record.action.as_str().as_bytes());
    field(record.outcome.as_str().as_bytes());
    field(record.subject.as_bytes());
    field(record.roles.len().to_string().as_bytes());
    for role in &record.roles {
        field(role.as_bytes());
    }
    field(record.service.as_bytes());
    field(record.integration_id.as_bytes());
    field(record.target.as_bytes());
    field(record.arguments_digest.as_bytes());
    field(record.arguments_json.as_bytes());
    field(record.reason.as_bytes());
    field(record.rule.as_bytes());
    let duration = record
        .duration_micros
        .map(|d| d.to_string())
        .unwrap_or_default();
    field(duration.as_bytes());
    field(record.trace_id.as_bytes());
    field(record.approval_id.as_bytes());
    field(previous_hash.as_bytes());
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// `record` placed after the event `previous` (`None` for the first).
pub fn link(previous: Option<(i64, &str)>, record: AuditRecord) -> AuditEvent {
    let (sequence, previous_hash) = previous.map_or((1, String::new()), |(sequence, hash)| {
        (sequence + 1, hash.to_owned())
    });
    let hash = event_hash(sequence, &record, &previous_hash);
    AuditEvent {
        sequence,
        record,
        previous_hash,
        hash,
    }
}

/// Where a chain's kept events start and end: retention removes its oldest
/// events and remembers the last one removed, so the first kept event is
/// checked against it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainBounds {
    /// The sequence of the last removed event (0 when none was).
    pub purged_through: i64,
    /// That event's hash (empty when none was removed).
    pub purged_hash: String,
    /// The sequence of the newest event (0 for an empty chain).
    pub head_sequence: i64,
    /// Its hash.
    pub head_hash: String,
}

/// The result of checking a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// How many events were checked.
    pub events_checked: i64,
    /// The first event that does not match, and what does not.
    pub broken: Option<(i64, String)>,
}

/// Checks the events of one chain, in sequence order, page by page.
#[derive(Debug)]
pub struct Verifier {
    expected_sequence: i64,
    previous_hash: String,
    checked: i64,
    broken: Option<(i64, String)>,
}

impl Verifier {
    /// A check from the first kept event of the chain `bounds` describes.
    pub fn new(bounds: &ChainBounds) -> Self {
        Self {
            expected_sequence: bounds.purged_through + 1,
            previous_hash: bounds.purged_hash.clone(),
            checked: 0,
            broken: None,
        }
    }

    /// Whether a broken link was found (later events need not be read).
    pub fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// The sequence of the first broken link, if one was found.
    pub fn broken_at(&self) -> Option<i64> {
        self.broken.as_ref().map(|(sequence, _)| *sequence)
    }

    /// The sequence after which the next page starts.
    pub fn position(&self) -> i64 {
        self.expected_sequence - 1
    }

    /// Checks the next event.
    pub fn check(&mut self, event: &AuditEvent) {
        if self.broken.is_some() {
            return;
        }
        self.checked += 1;
        let problem = if event.sequence != self.expected_sequence {
            Some((
                self.expected_sequence,
                format!(
                    "event {} is missing (the next stored event is {})",
                    self.expected_sequence, event.sequence
                ),
            ))
        } else if event.previous_hash != self.previous_hash {
            Some((
                event.sequence,
                "its previous_hash is not the previous event's hash".to_owned(),
            ))
        } else if event_hash(event.sequence, &event.record, &event.previous_hash) != event.hash {
            Some((
                event.sequence,
                "its content does not match its hash".to_owned(),
            ))
        } else {
            None
        };
        if problem.is_some() {
            self.broken = problem;
            return;
        }
        self.expected_sequence += 1;
        self.previous_hash.clone_from(&event.hash);
    }

    /// The verdict, once every kept event up to the head of `bounds` was
    /// checked: the last one must be that head, or newer events were
    /// removed (or the head moved back).
    pub fn finish(self, bounds: &ChainBounds) -> Verdict {
        let broken = self.broken.or_else(|| {
            let last = self.expected_sequence - 1;
            let head = bounds.head_sequence;
            if last > head {
                Some((
                    head + 1,
                    format!("event {} is past the chain's head, event {head}", head + 1),
                ))
            } else if last < head {
                Some((
                    last + 1,
                    format!("the chain ends at event {last}, its head is event {head}"),
                ))
            } else if last > 0 && self.previous_hash != bounds.head_hash {
                Some((last, "its hash is not the chain head's".to_owned()))
            } else {
                None
            }
        });
        Verdict {
            events_checked: self.checked,
            broken,
        }
    }
}
