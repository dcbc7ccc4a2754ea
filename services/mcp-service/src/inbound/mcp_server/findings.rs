//! What the guardrails found in a call, as the endpoint tells its clients:
//! under `_meta["io.switchboard/guardrails"]` of the result, a list of
//! `{detector, action, place, count}` (never the text found).

use rmcp::model::MetaObject;

use crate::domain::guardrails::Finding;

/// The key of a result's `_meta` under which its findings travel.
pub const META_KEY: &str = "io.switchboard/guardrails";

/// `findings` written to a result's `meta`; nothing when there are none.
pub fn attach(meta: &mut Option<MetaObject>, findings: &[Finding]) {
    if findings.is_empty() {
        return;
    }
    if let Ok(value) = serde_json::to_value(findings) {
        meta.get_or_insert_with(Default::default)
            .insert(META_KEY.to_owned(), value);
    }
}
