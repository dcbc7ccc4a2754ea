//! Answering a server's input requests the way an application would when
//! ExecuteTool answers with `input_required`: it shows the user the
//! server's form and sends back what they filled in, with the server's
//! state unchanged. Here the "user" accepts every form, giving each field
//! its default, or `true`, `""` or `0` by its type.

use std::collections::HashMap;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};
use switchboard_proto::mcp::v1 as pb;

use crate::switchboard::Switchboard;

/// How many times one call may come back with `input_required`.
const MAX_ROUNDS: usize = 5;

/// Calls `tool` and answers its input requests until it completes.
pub async fn call_answering(
    switchboard: &mut Switchboard,
    id: &str,
    tool: &str,
    arguments: &Value,
) -> anyhow::Result<pb::ExecuteToolResponse> {
    let mut response = switchboard.execute_tool(id, tool, arguments).await?;
    for _ in 0..MAX_ROUNDS {
        let Some(input) = response.input_required.take() else {
            return Ok(response);
        };
        let mut answers = HashMap::new();
        for request in &input.requests {
            answers.insert(request.key.clone(), answer(request)?.to_string());
        }
        eprintln!(
            "conformance-client: {tool} asked {} question(s); answering",
            answers.len()
        );
        response = switchboard
            .resume_tool(id, tool, arguments, answers, input.request_state)
            .await?;
    }
    bail!("{tool} kept asking for input")
}

/// The user's answer to one request: accept a form with its fields filled.
fn answer(request: &pb::InputRequest) -> anyhow::Result<Value> {
    if request.method != "elicitation/create" {
        bail!("no answer for a `{}` request", request.method);
    }
    let params: Value =
        serde_json::from_str(&request.params_json).context("input request params are not JSON")?;
    let properties = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let content: Map<String, Value> = properties
        .iter()
        .map(|(name, property)| (name.clone(), field_value(property)))
        .collect();
    Ok(json!({"action": "accept", "content": content}))
}

fn field_value(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("number" | "integer") => json!(0),
        _ => json!(""),
    }
}
