//! How mcp-service answers a server's elicitation (a request for input from
//! the user in the middle of a call): by the operator's policy. No person is
//! behind an upstream session while a tool runs, so the answer is either a
//! decline or the defaults the server's own form declares, unless the
//! policy passes it to the caller: a server of 2026-07-28 asks in an
//! `input_required` result, which the caller can answer with a later call.
//!
//! The MCP client turns this decision into the protocol's answer
//! (`outbound::mcp::elicitation`).

use serde_json::{Map, Value};

/// The operator's elicitation policy (`SWITCHBOARD_ELICITATION`).
///
/// `clap::ValueEnum` names the setting's values where the operator sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ElicitationPolicy {
    /// Decline every elicitation.
    #[default]
    Decline,
    /// Accept a form with the defaults its schema declares; decline a form
    /// with a required field that has none, and every URL elicitation.
    Defaults,
    /// Pass a server's `input_required` elicitations to the caller
    /// (ExecuteTool answers with `input_required`); an elicitation sent in
    /// the middle of a call on a session, which cannot wait for the caller,
    /// is declined.
    Caller,
}

impl ElicitationPolicy {
    /// Whether mcp-service answers elicitations itself rather than passing
    /// them to the caller.
    pub fn answers_itself(self) -> bool {
        self != Self::Caller
    }

    /// The content this policy accepts a form with (`requested_schema` its
    /// JSON Schema), or `None` when it declines.
    pub fn form_content(self, requested_schema: &Value) -> Option<Map<String, Value>> {
        match self {
            Self::Defaults => defaults(requested_schema),
            Self::Decline | Self::Caller => None,
        }
    }
}

/// The defaults a form schema declares, or `None` when a required field
/// has no default.
fn defaults(schema: &Value) -> Option<Map<String, Value>> {
    let properties = schema.get("properties").and_then(Value::as_object)?;
    let content: Map<String, Value> = properties
        .iter()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    required
        .iter()
        .filter_map(Value::as_str)
        .all(|name| content.contains_key(name))
        .then_some(content)
}
