//! The answer to a server's elicitation, in the protocol's terms, as the
//! operator's [`ElicitationPolicy`] decides it.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::Value;

use crate::domain::elicitation::ElicitationPolicy;

/// The answer to `request` under `policy`: a form accepted with the content
/// the policy gives it, anything else declined.
pub fn answer(policy: ElicitationPolicy, request: &ElicitRequestParams) -> ElicitResult {
    let content = match request {
        ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } => serde_json::to_value(requested_schema)
            .ok()
            .and_then(|schema| policy.form_content(&schema)),
        _ => None,
    };
    match content {
        Some(content) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
        }
        None => ElicitResult::new(ElicitationAction::Decline),
    }
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
        let reply = answer(ElicitationPolicy::Defaults, &with_defaults);
        assert_eq!(reply.action, ElicitationAction::Accept);
        assert_eq!(
            serde_json::to_value(reply.content).unwrap(),
            json!({"name": "Ada", "age": 36, "ok": true})
        );
        for policy in [ElicitationPolicy::Decline, ElicitationPolicy::Caller] {
            assert_eq!(
                answer(policy, &with_defaults).action,
                ElicitationAction::Decline
            );
        }

        let missing = form(json!({
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
        }));
        let reply = answer(ElicitationPolicy::Defaults, &missing);
        assert_eq!(reply.action, ElicitationAction::Decline);
        assert!(reply.content.is_none());
    }
}
