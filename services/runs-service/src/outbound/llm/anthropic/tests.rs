//! Unit tests of `anthropic`.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};

use super::*;
use crate::domain::model::{FinishReason, ModelEvent, TokenUsage, ToolCall};
use crate::outbound::llm::{
    ProviderKind, build_provider,
    test_support::{
        API_KEY, collect, config, echo_tool, http, quick_retries, simple_request, text_of,
        tool_round_request,
    },
};

/// Anthropic base URLs end in `/v1` like OpenAI ones.
fn provider(model: &ScriptedModel) -> Anthropic {
    Anthropic::new(&config(ProviderKind::Anthropic, model.base_url()), http())
        .with_retry_policy(quick_retries(2))
}

#[tokio::test]
async fn streamed_text_reassembles_with_usage_and_finish() {
    let text = "Claude streams text_delta events.";
    let model = ScriptedModel::start(vec![Turn::Text(text.into())])
        .await
        .expect("starts");
    let events = collect(
        provider(&model)
            .stream(simple_request())
            .await
            .expect("stream starts"),
    )
    .await;
    assert_eq!(text_of(&events), text);
    assert!(
        events
            .iter()
            .filter(|event| matches!(event, Ok(ModelEvent::TextDelta(_))))
            .count()
            > 1
    );
    assert_eq!(
        events[events.len() - 2..],
        [
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 10,
                output_tokens: 5
            })),
            Ok(ModelEvent::Finished {
                reason: FinishReason::Stop
            }),
        ]
    );
    model.shutdown().await;
}

#[tokio::test]
async fn parallel_tool_uses_arrive_complete_and_in_order() {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![
        ScriptedToolCall::new("toolu_a", "search", r#"{"query":"streams in rust"}"#),
        ScriptedToolCall::new("toolu_b", "fetch", r#"{"url":"http://example.test/page"}"#),
    ])])
    .await
    .expect("starts");
    let events: Vec<ModelEvent> = collect(
        provider(&model)
            .stream(simple_request())
            .await
            .expect("stream starts"),
    )
    .await
    .into_iter()
    .map(|event| event.expect("no errors"))
    .collect();
    assert_eq!(
        events,
        vec![
            ModelEvent::ToolCall(ToolCall {
                id: "toolu_a".into(),
                name: "search".into(),
                arguments: r#"{"query":"streams in rust"}"#.into(),
            }),
            ModelEvent::ToolCall(ToolCall {
                id: "toolu_b".into(),
                name: "fetch".into(),
                arguments: r#"{"url":"http://example.test/page"}"#.into(),
            }),
            ModelEvent::Usage(TokenUsage {
                input_tokens: 10,
                output_tokens: 5
            }),
            ModelEvent::Finished {
                reason: FinishReason::ToolCalls
            },
        ]
    );
    model.shutdown().await;
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
async fn rate_limit_with_retry_after_is_retried_after_waiting() {
    let model = ScriptedModel::start(vec![
        Turn::Error {
            status: 429,
            body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#
                .into(),
            retry_after: Some(1),
        },
        Turn::Text("after the wait".into()),
    ])
    .await
    .expect("starts");
    let started = Instant::now();
    let events = collect(
        provider(&model)
            .stream(simple_request())
            .await
            .expect("the retry succeeds"),
    )
    .await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(text_of(&events), "after the wait");
    assert_eq!(model.requests().len(), 2);
    model.shutdown().await;
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
async fn the_key_never_shows_in_errors() {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 401,
        body: format!("invalid x-api-key {API_KEY}"),
        retry_after: None,
    }])
    .await
    .expect("starts");
    let provider = build_provider(&config(ProviderKind::Anthropic, model.base_url()), http());
    let error = provider
        .stream(simple_request())
        .await
        .err()
        .expect("unauthorized");
    assert!(matches!(error, ModelError::Http { status: 401, .. }));
    assert!(!error.to_string().contains(API_KEY), "{error}");
    assert!(
        !format!("{provider:?}").contains(API_KEY),
        "debug hides the key"
    );
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

#[tokio::test]
async fn dropping_the_stream_midway_stops_reading() {
    let model = ScriptedModel::start(vec![
        Turn::Text("a long answer ".repeat(200)),
        Turn::Text("next".into()),
    ])
    .await
    .expect("starts");
    let provider = provider(&model);
    let mut stream = provider.stream(simple_request()).await.expect("starts");
    assert!(matches!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta(_)))
    ));
    drop(stream);
    let events = collect(provider.stream(simple_request()).await.expect("starts")).await;
    assert_eq!(text_of(&events), "next");
    model.shutdown().await;
}
