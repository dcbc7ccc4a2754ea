//! What only the Anthropic adapter does: its request's shape (tool results
//! merged, a history opening with the user), its overload status and its
//! stream's format. What every adapter does is in `../provider_suite.rs`.

use switchboard_scripted_model::{ScriptedModel, Turn};

use super::*;
use crate::domain::model::ToolCall;
use crate::outbound::llm::{
    ProviderKind,
    test_support::{
        API_KEY, collect, config, echo_tool, http, quick_retries, simple_request,
        tool_round_request,
    },
};

/// Anthropic base URLs end in `/v1` like OpenAI ones.
fn provider(model: &ScriptedModel) -> Anthropic {
    Anthropic::new(&config(ProviderKind::Anthropic, model.base_url()), http())
        .with_retry_policy(quick_retries(2))
}

#[tokio::test]
async fn request_body_carries_system_tools_and_merged_tool_results() {
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
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["system"], "You are terse.");
    let tool = echo_tool();
    assert_eq!(
        body["tools"],
        json!([{"name": "echo", "description": "Echoes its text", "input_schema": tool.parameters}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "echo twice"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "call_1", "name": "echo", "input": {"text": "a"}},
                {"type": "tool_use", "id": "call_2", "name": "echo", "input": {"text": "b"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "a", "is_error": false},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "boom", "is_error": true},
            ]},
        ])
    );
    let headers = &model.request_headers()[0];
    assert_eq!(headers["x-api-key"], API_KEY);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
    model.shutdown().await;
}

#[test]
fn max_tokens_is_sent_and_broken_arguments_become_an_empty_input() {
    let mut request = simple_request();
    request.messages.push(ChatMessage::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "t".into(),
            name: "echo".into(),
            arguments: "{oops".into(),
        }],
    });
    let body = request_body(&request);
    assert_eq!(body["max_tokens"], 1024);
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "t", "name": "echo", "input": {}}])
    );
}

#[test]
fn a_history_opening_with_a_model_turn_gets_a_user_note_first() {
    let mut request = tool_round_request();
    request.messages.remove(0);
    let body = request_body(&request);
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": EARLIER_MESSAGES_LEFT_OUT})
    );
    assert_eq!(body["messages"][1]["role"], "assistant");
}

#[tokio::test]
async fn overload_exhausts_the_retries() {
    let failure = Turn::Error {
        status: 529,
        body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            .into(),
        retry_after: None,
    };
    let model = ScriptedModel::start(vec![failure.clone(), failure.clone(), failure])
        .await
        .expect("starts");
    let error = provider(&model)
        .stream(simple_request())
        .await
        .err()
        .expect("all attempts fail");
    assert!(
        matches!(error, ModelError::Http { status: 529, .. }),
        "{error:?}"
    );
    assert_eq!(model.requests().len(), 3);
    model.shutdown().await;
}

#[tokio::test]
async fn malformed_event_is_a_protocol_error() {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 200,
        body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n".into(),
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
    assert!(
        matches!(events.as_slice(), [Err(ModelError::Protocol(_))]),
        "{events:?}"
    );
    model.shutdown().await;
}

#[tokio::test]
async fn error_event_mid_stream_ends_the_stream() {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 200,
        body: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
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
    assert_eq!(
        events,
        vec![Err(ModelError::Http {
            status: 529,
            body: "overloaded_error: Overloaded".into()
        })]
    );
    model.shutdown().await;
}
