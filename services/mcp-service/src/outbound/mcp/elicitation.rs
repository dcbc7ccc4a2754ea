//! How mcp-service answers a server's elicitation (a request for input from
//! the user in the middle of a call): by the operator's policy. No person is
//! behind an upstream session while a tool runs, so the answer is either a
//! decline or the defaults the server's own form declares, unless the
//! policy passes it to the caller: a server of 2026-07-28 asks in an
//! `input_required` result, which the caller can answer with a later call
//! (see [`crate::outbound::mcp::input_required`]).

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// The operator's elicitation policy (`SWITCHBOARD_ELICITATION`).
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

    /// The answer to `request` under this policy.
    pub fn answer(self, request: &ElicitRequestParams) -> ElicitResult {
        let content = match (self, request) {
            (
                Self::Defaults,
                ElicitRequestParams::FormElicitationParams {
                    requested_schema, ..
                },
            ) => serde_json::to_value(requested_schema)
                .ok()
                .and_then(|schema| defaults(&schema)),
            _ => None,
        };
        match content {
            Some(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            None => ElicitResult::new(ElicitationAction::Decline),
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "details, please",
            "requestedSchema": schema,
        }))
        .expect("a form elicitation")
    }

    #[test]
    fn defaults_fill_the_form_and_a_required_field_without_one_declines() {
        let with_defaults = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer", "default": 36},
                "ok": {"type": "boolean", "default": true},
                "note": {"type": "string"},
            },
            "required": ["name"],
        }));
        let answer = ElicitationPolicy::Defaults.answer(&with_defaults);
        assert_eq!(answer.action, ElicitationAction::Accept);
        assert_eq!(
            serde_json::to_value(answer.content).unwrap(),
            json!({"name": "Ada", "age": 36, "ok": true})
        );
        for policy in [ElicitationPolicy::Decline, ElicitationPolicy::Caller] {
            assert_eq!(
                policy.answer(&with_defaults).action,
                ElicitationAction::Decline
            );
        }

        let missing = form(json!({
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
        }));
        let answer = ElicitationPolicy::Defaults.answer(&missing);
        assert_eq!(answer.action, ElicitationAction::Decline);
        assert!(answer.content.is_none());
    }
}
