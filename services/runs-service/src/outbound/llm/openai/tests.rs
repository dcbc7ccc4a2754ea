//! What only the OpenAI adapter does: its request's shape and its stream's
//! format. What every adapter does is in `../provider_suite.rs`.

use serde_json::json;
use switchboard_scripted_model::{ScriptedModel, Turn};

use super::*;
use crate::outbound::llm::{
    ProviderKind,
    test_support::{
        API_KEY, collect, config, http, quick_retries, simple_request, tool_round_request,
    },
};

fn provider(model: &ScriptedModel) -> OpenAiCompatible {
    OpenAiCompatible::new(
        &config(ProviderKind::OpenAiCompatible, model.base_url()),
        http(),
    )
    .with_retry_policy(quick_retries(2))
}

#[tokio::test]
async fn request_body_carries_system_tools_and_tool_results() {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let _ = collect(
        provider(&model)
            .stream(tool_round_request())
            .await
            .expect("stream starts"),
    )
    .await;

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0];
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "echo",
            "description": "Echoes its text",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "echo twice"},
            {"role": "assistant", "content": "calling", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"a\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"b\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a"},
            {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
        ])
    );
    let headers = &model.request_headers()[0];
    assert_eq!(headers["authorization"], format!("Bearer {API_KEY}"));
    model.shutdown().await;
}

#[tokio::test]
async fn malformed_stream_line_is_a_protocol_error() {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 200,
        body: "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {not json\n\n"
            .into(),
        retry_after: None,
    }])
    .await
    .expect("starts");
    let events = collect(
        provider(&model)
            .stream(simple_request())
            .await
            .expect("stream starts"),
    )
    .await;
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("hi".into())));
    assert!(
        matches!(events.last(), Some(Err(ModelError::Protocol(_)))),
        "{events:?}"
    );
    model.shutdown().await;
}
