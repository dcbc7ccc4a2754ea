//! Tool schemas the providers refuse are refused here too, before the
//! script moves on.

use serde_json::json;
use switchboard_scripted_model::{ScriptedModel, Turn};

use super::{post, root};

/// A tool schema as MCP servers write it: open object, optional property.
fn open_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"q": {"type": "string"}}})
}

#[tokio::test]
async fn openai_strict_mode_refuses_an_open_object_and_keeps_the_turn() {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let url = format!("{}/chat/completions", model.base_url());
    let request = |strict: bool| {
        json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "search", "strict": strict, "parameters": open_schema()}}]
        })
    };
    let refused = post(&url, &request(true)).await;
    assert_eq!(refused.status(), 400);
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "tools[0].function.parameters");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(
        message.starts_with("Invalid schema for function 'search':")
            && message
                .contains("'additionalProperties' is required to be supplied and to be false"),
        "{message}"
    );
    // The refused request used no turn: the same schema without strict gets it.
    let answered = post(&url, &request(false)).await;
    assert_eq!(answered.status(), 200);
    let body: serde_json::Value = answered.json().await.expect("json");
    assert_eq!(body["choices"][0]["message"]["content"], "ok");
    model.shutdown().await;
}

#[tokio::test]
async fn anthropic_refuses_a_choice_at_the_root() {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let url = format!("{}/v1/messages", root(&model));
    let schema = json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]});
    let response = post(
        &url,
        &json!({
            "model": "m",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "pick", "input_schema": schema}]
        }),
    )
    .await;
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["type"], "error");
    assert_eq!(
        body["error"]["message"],
        "tools.0.custom.input_schema does not support oneOf, allOf, or anyOf at the top level"
    );
    model.shutdown().await;
}
