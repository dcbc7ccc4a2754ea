//! The arguments digest: SHA-256 hex of the canonical JSON of a call's
//! arguments (keys sorted recursively, no whitespace, numbers as written),
//! which approvals bind to and the audit trail records.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// SHA-256 hex of the canonical JSON of `arguments`, so the same arguments
/// in any key order bind to the same approval.
#[must_use]
pub fn arguments_digest(arguments: &Value) -> String {
    let mut text = String::new();
    canonical(arguments, &mut text);
    let hash = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in hash {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Writes `value` with object keys sorted at every depth, whatever the map
/// order serde_json was built with.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(inner) = map.get(key) {
                    canonical(inner, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}
