//! Walking the strings of tool traffic: each finding offered to the
//! caller's `act`, which counts it and says whether to replace it by
//! `[redacted {detector}]`.

use base64::{Engine as _, engine::general_purpose::STANDARD};
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
        Value::String(text) => redact_in_place(text, act),
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, act)),
        Value::Object(object) => object.values_mut().for_each(|item| redact_value(item, act)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A result's text content, embedded text resources and structured
/// content, redacted in place as `act` says.
pub(super) fn redact_result(result: &mut CallToolResult, act: &mut impl FnMut(Detector) -> bool) {
    for block in &mut result.content {
        redact_block(block, act);
    }
    if let Some(structured) = &mut result.structured_content {
        redact_value(structured, act);
    }
}

/// A content block's text, or its embedded text resource's, redacted in
/// place as `act` says; other blocks (images, audio, links) left as they
/// are.
pub(super) fn redact_block(block: &mut ContentBlock, act: &mut impl FnMut(Detector) -> bool) {
    match block {
        ContentBlock::Text(text) => redact_in_place(&mut text.text, act),
        ContentBlock::Resource(embedded) => {
            redact_contents(std::slice::from_mut(&mut embedded.resource), act);
        }
        _ => {}
    }
}

/// A resource's contents redacted in place as `act` says: its text, and
/// any blob that holds UTF-8 text (a CSV sent as a blob, say, which a run
/// imports as text); other blobs left as they are.
pub(super) fn redact_contents(
    contents: &mut [ResourceContents],
    act: &mut impl FnMut(Detector) -> bool,
) {
    for item in contents {
        match item {
            ResourceContents::TextResourceContents { text, .. } => redact_in_place(text, act),
            ResourceContents::BlobResourceContents { blob, .. } => redact_blob(blob, act),
            _ => {}
        }
    }
}

/// A base64 blob redacted as text when it decodes to UTF-8.
fn redact_blob(blob: &mut String, act: &mut impl FnMut(Detector) -> bool) {
    let Ok(bytes) = STANDARD.decode(blob.as_bytes()) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return;
    };
    if let Some(redacted) = redact_text(text, act) {
        *blob = STANDARD.encode(redacted);
    }
}

fn redact_in_place(text: &mut String, act: &mut impl FnMut(Detector) -> bool) {
    if let Some(redacted) = redact_text(text, act) {
        *text = redacted;
    }
}
