//! What only the OpenAI adapter does: its request's shape and its stream's
//! format. What every adapter does is in `../provider_suite.rs`.

use serde_json::json;
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};

use super::*;
use crate::domain::model::ToolSpec;
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
                "additionalProperties": false,
            },
            "strict": true,
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

/// A search tool with an optional `limit`, as an MCP server writes it.
fn search_tool() -> ToolSpec {
    ToolSpec {
        name: "search".into(),
        description: "Searches".into(),
        parameters: json!({
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"]
        }),
    }
}

#[tokio::test]
async fn a_strict_tools_null_for_a_left_out_property_never_reaches_the_server() {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![ScriptedToolCall::new(
        "call_1",
        "search",
        r#"{"query":"rust","limit":null}"#,
    )])])
    .await
    .expect("starts");
    let mut request = simple_request();
    request.tools = std::sync::Arc::from([search_tool()]);
    let events = collect(provider(&model).stream(request).await.expect("starts")).await;

    let sent = &model.requests()[0]["tools"][0]["function"];
    assert_eq!(sent["strict"], true);
    assert_eq!(
        sent["parameters"]["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    let call = events
        .iter()
        .find_map(|event| match event {
            Ok(ModelEvent::ToolCall(call)) => Some(call),
            _ => None,
        })
        .expect("a tool call");
    assert_eq!(call.arguments, r#"{"query":"rust"}"#);
    model.shutdown().await;
}

#[tokio::test]
async fn with_strict_tools_off_the_schema_goes_as_written() {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let mut config = config(ProviderKind::OpenAiCompatible, model.base_url());
    config.strict_tools = false;
    let mut request = simple_request();
    request.tools = std::sync::Arc::from([search_tool()]);
    let _ = collect(
        OpenAiCompatible::new(&config, http())
            .stream(request)
            .await
            .expect("starts"),
    )
    .await;
    let sent = &model.requests()[0]["tools"][0]["function"];
    assert!(sent.get("strict").is_none(), "{sent}");
    assert_eq!(sent["parameters"], search_tool().parameters);
    model.shutdown().await;
}
