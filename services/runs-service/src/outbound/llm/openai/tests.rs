//! Unit tests of `openai`.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::json;
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};

use super::*;
use crate::{
    domain::model::TokenUsage,
    outbound::llm::{
        ProviderKind, build_provider,
        test_support::{
            API_KEY, collect, config, http, quick_retries, simple_request, text_of,
            tool_round_request,
        },
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
async fn streamed_text_reassembles_with_usage_and_finish() {
    let text = "Streaming text arrives in many small pieces.";
    let model = ScriptedModel::start(vec![Turn::Text(text.into())])
        .await
        .expect("starts");
    let stream = provider(&model)
        .stream(simple_request())
        .await
        .expect("stream starts");
    let events = collect(stream).await;

    assert_eq!(text_of(&events), text);
    let deltas = events
        .iter()
        .filter(|event| matches!(event, Ok(ModelEvent::TextDelta(_))))
        .count();
    assert!(deltas > 1, "text came in {deltas} pieces");
    let tail: Vec<_> = events[events.len() - 2..].to_vec();
    assert_eq!(
        tail,
        vec![
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
async fn parallel_tool_calls_arrive_complete_and_in_order() {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![
        ScriptedToolCall::new("call_a", "search", r#"{"query":"streams in rust"}"#),
        ScriptedToolCall::new("call_b", "fetch", r#"{"url":"http://example.test/page"}"#),
    ])])
    .await
    .expect("starts");
    let events = collect(
        provider(&model)
            .stream(simple_request())
            .await
            .expect("stream starts"),
    )
    .await;
    let events: Vec<ModelEvent> = events.into_iter().map(|e| e.expect("no errors")).collect();
    assert_eq!(
        events,
        vec![
            ModelEvent::ToolCall(ToolCall {
                id: "call_a".into(),
                name: "search".into(),
                arguments: r#"{"query":"streams in rust"}"#.into(),
            }),
            ModelEvent::ToolCall(ToolCall {
                id: "call_b".into(),
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
async fn invalid_tool_arguments_are_passed_through_raw() {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![ScriptedToolCall::new(
        "call_x",
        "echo",
        "{\"text\": oops",
    )])])
    .await
    .expect("starts");
    let events = collect(
        provider(&model)
            .stream(simple_request())
            .await
            .expect("stream starts"),
    )
    .await;
    assert!(events.contains(&Ok(ModelEvent::ToolCall(ToolCall {
        id: "call_x".into(),
        name: "echo".into(),
        arguments: "{\"text\": oops".into(),
    }))));
    model.shutdown().await;
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
async fn no_api_key_sends_no_authorization() {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let mut config = config(ProviderKind::OpenAiCompatible, model.base_url());
    config.api_key = None;
    let provider = build_provider(&config, http());
    let _ = collect(provider.stream(simple_request()).await.expect("starts")).await;
    assert!(model.request_headers()[0].get("authorization").is_none());
    model.shutdown().await;
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried_after_waiting() {
    let model = ScriptedModel::start(vec![
        Turn::Error {
            status: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
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
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited as Retry-After asked"
    );
    assert_eq!(text_of(&events), "after the wait");
    assert_eq!(model.requests().len(), 2);
    model.shutdown().await;
}

#[tokio::test]
async fn server_errors_exhaust_the_retries() {
    let failure = Turn::Error {
        status: 500,
        body: "internal trouble".into(),
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
    assert_eq!(
        error,
        ModelError::Http {
            status: 500,
            body: "internal trouble".into()
        }
    );
    assert_eq!(model.requests().len(), 3, "first attempt plus two retries");
    model.shutdown().await;
}

#[tokio::test]
async fn client_errors_are_not_retried_and_never_show_the_key() {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 401,
        body: format!(r#"{{"error":{{"message":"Incorrect API key provided: {API_KEY}"}}}}"#),
        retry_after: None,
    }])
    .await
    .expect("starts");
    let error = provider(&model)
        .stream(simple_request())
        .await
        .err()
        .expect("unauthorized");
    assert!(matches!(error, ModelError::Http { status: 401, .. }));
    let shown = error.to_string();
    assert!(!shown.contains(API_KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    assert_eq!(model.requests().len(), 1);
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

#[tokio::test]
async fn a_stream_cut_short_is_a_protocol_error() {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 200,
        body: "data: {\"choices\":[{\"delta\":{\"content\":\"hal\"}}]}\n\n".into(),
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
    assert!(matches!(events.last(), Some(Err(ModelError::Protocol(_)))));
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
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(_)))));
    drop(stream);

    let events = collect(provider.stream(simple_request()).await.expect("starts")).await;
    assert_eq!(text_of(&events), "next");
    model.shutdown().await;
}

#[tokio::test]
async fn slow_first_byte_is_a_timeout() {
    let model = ScriptedModel::start(vec![Turn::Delay(
        Duration::from_secs(30),
        Box::new(Turn::Text("too late".into())),
    )])
    .await
    .expect("starts");
    let mut config = config(ProviderKind::OpenAiCompatible, model.base_url());
    config.connect_timeout = Duration::from_millis(100);
    config.request_timeout = Duration::from_millis(200);
    let error = OpenAiCompatible::new(&config, http())
        .stream(simple_request())
        .await
        .err()
        .expect("times out");
    assert_eq!(error, ModelError::Timeout);
    assert_eq!(model.requests().len(), 1, "timeouts are not retried");
    model.shutdown().await;
}

#[tokio::test]
async fn connection_refused_is_retried_then_a_connect_error() {
    // Bind and release a port so that nothing listens on it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = listener.local_addr().expect("has an address");
    drop(listener);
    let config = config(ProviderKind::OpenAiCompatible, format!("http://{addr}/v1"));
    let error = OpenAiCompatible::new(&config, http())
        .with_retry_policy(quick_retries(1))
        .stream(simple_request())
        .await
        .err()
        .expect("nothing listens");
    assert!(matches!(error, ModelError::Connect(_)), "{error:?}");
    assert!(!error.to_string().contains(API_KEY));
}
