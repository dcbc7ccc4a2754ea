//! Walking the strings of tool traffic: each finding offered to the
//! caller's `act`, which counts it and says whether to replace it by
//! `[redacted {detector}]`.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::detectors::{Detector, find};

/// `text` with each finding `act` says to redact replaced by its marker.
pub fn redact_text(text: &str, act: &mut impl FnMut(Detector) -> bool) -> Option<String> {
    let found = find(text);
    let mut out: Option<String> = None;
    let mut at = 0;
    for f in found {
        if act(f.detector) {
            let written = out.get_or_insert_with(|| String::with_capacity(text.len()));
            written.push_str(&text[at..f.start]);
            written.push_str("[redacted ");
            written.push_str(f.detector.name());
            written.push(']');
            at = f.end;
        }
    }
    let mut out = out?;
    out.push_str(&text[at..]);
    Some(out)
}

/// Every string of `value` (not object keys) redacted in place as `act`
/// says.
pub fn redact_value(value: &mut Value, act: &mut impl FnMut(Detector) -> bool) {
    match value {
        Value::String(text) => {
            if let Some(redacted) = redact_text(text, act) {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, act)),
        Value::Object(object) => object.values_mut().for_each(|item| redact_value(item, act)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A result's text content, embedded text resources and structured
/// content, redacted in place as `act` says.
pub(super) fn redact_result(result: &mut CallToolResult, act: &mut impl FnMut(Detector) -> bool) {
    for block in &mut result.content {
        let text = match block {
            ContentBlock::Text(text) => &mut text.text,
            ContentBlock::Resource(embedded) => match &mut embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => text,
                _ => continue,
            },
            _ => continue,
        };
        if let Some(redacted) = redact_text(text, act) {
            *text = redacted;
        }
    }
    if let Some(structured) = &mut result.structured_content {
        redact_value(structured, act);
    }
}
