//! The guardrails' detectors on any text a server or a model could send:
//! the findings lie inside the text on character boundaries, in order and
//! never overlapping, and redacting them grows the text by at most one
//! marker a finding.
//!
//! Input: the text's bytes (read as UTF-8, invalid sequences replaced).
//!
//! Checked on every input: no panic; the invariants above.

#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_mcp_service::domain::guardrails::{detectors::find, redact_text};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let found = find(&text);
    let mut end = 0;
    for f in &found {
        assert!(f.start >= end && f.start < f.end && f.end <= text.len(), "{found:?}");
        assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        end = f.end;
    }
    let redacted = redact_text(&text, &mut |_| true);
    match &redacted {
        Some(redacted) => assert!(redacted.len() <= text.len() + 32 * found.len()),
        None => assert!(found.is_empty()),
    }
});
