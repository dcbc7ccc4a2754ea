//! What every model provider adapter must do, run over each of them against
//! the scripted model speaking that provider's protocol: text and tool calls
//! streamed back complete, retries, errors that never show the key, time
//! limits, and what is sent (the request body, compared with a reviewed file
//! in `snapshots/`, so that a change of what a provider receives shows in
//! review). What only one provider does stays in that adapter's `tests.rs`;
//! the limits on what a provider streams back are tested over both adapters
//! in `tests/it/hostile_model/`.
//!
//! A new provider adds an arm to each `match` of [`Adapter`], a module to
//! `provider_suite!` and its snapshot (written with `SWITCHBOARD_UPDATE_SNAPSHOTS` set,
//! then reviewed).

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};

use super::{
    Anthropic, OpenAiCompatible, ProviderConfig, ProviderKind, build_provider,
    test_support::{
        API_KEY, collect, config, http, quick_retries, simple_request, text_of, tool_round_request,
    },
};
use super::{schema::tests::kitchen_sink, snapshot::assert_matches_snapshot};
use crate::domain::{
    model::{FinishReason, ModelError, ModelEvent, TokenUsage, ToolCall, ToolSpec},
    ports::ModelProvider,
};

/// The headers a provider's key travels in (OpenAI's bearer token,
/// Anthropic's `x-api-key`).
const KEY_HEADERS: [&str; 2] = ["authorization", "x-api-key"];

/// The adapter a test of the suite runs over.
#[derive(Debug, Clone, Copy)]
enum Adapter {
    OpenAi,
    Anthropic,
}

impl Adapter {
    fn kind(self) -> ProviderKind {
        match self {
            Self::OpenAi => ProviderKind::OpenAiCompatible,
            Self::Anthropic => ProviderKind::Anthropic,
        }
    }

    /// The adapter for `config`, retrying at most `retries` times after a
    /// backoff short enough for tests.
    fn with_config(self, config: &ProviderConfig, retries: u32) -> Arc<dyn ModelProvider> {
        let retry = quick_retries(retries);
        match self {
            Self::OpenAi => {
                Arc::new(OpenAiCompatible::new(config, http()).with_retry_policy(retry))
            }
            Self::Anthropic => Arc::new(Anthropic::new(config, http()).with_retry_policy(retry)),
        }
    }

    /// The adapter calling `model`, with two quick retries.
    fn against(self, model: &ScriptedModel) -> Arc<dyn ModelProvider> {
        self.with_config(&config(self.kind(), model.base_url()), 2)
    }

    /// A `429` answer's body as this provider writes it.
    fn rate_limit_body(self) -> &'static str {
        match self {
            Self::OpenAi => r#"{"error":{"message":"slow down"}}"#,
            Self::Anthropic => {
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#
            }
        }
    }

    /// A `401` answer's body as this provider writes it, quoting the key.
    fn unauthorized_body(self) -> String {
        match self {
            Self::OpenAi => {
                format!(r#"{{"error":{{"message":"Incorrect API key provided: {API_KEY}"}}}}"#)
            }
            Self::Anthropic => format!("invalid x-api-key {API_KEY}"),
        }
    }

    /// The start of a streamed answer that ends before the answer does.
    fn cut_short_stream(self) -> &'static str {
        match self {
            Self::OpenAi => "data: {\"choices\":[{\"delta\":{\"content\":\"hal\"}}]}\n\n",
            Self::Anthropic => {
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
            }
        }
    }

    /// The reviewed file holding the tools this adapter sends for the schemas
    /// of [`tool_schemas_take_the_form_the_provider_accepts`].
    fn schema_snapshot(self) -> PathBuf {
        let name = match self {
            Self::OpenAi => "openai_tool_schemas.json",
            Self::Anthropic => "anthropic_tool_schemas.json",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("src/outbound/llm/snapshots")
            .join(name)
    }

    /// The reviewed file holding the request body this adapter sends for
    /// [`tool_round_request`].
    fn snapshot(self) -> PathBuf {
        let name = match self {
            Self::OpenAi => "openai_request_with_tools.json",
            Self::Anthropic => "anthropic_request_with_tools.json",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("src/outbound/llm/snapshots")
            .join(name)
    }
}

/// Defines `mod openai` and `mod anthropic`, each with one `#[tokio::test]`
/// per named `async fn(Adapter)`, so that every behaviour runs over every
/// adapter.
macro_rules! provider_suite {
    ($($name:ident),* $(,)?) => {
        mod openai {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Adapter::OpenAi).await;
                }
            )*
        }
        mod anthropic {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Adapter::Anthropic).await;
                }
            )*
        }
    };
}

provider_suite!(
    streamed_text_reassembles_with_usage_and_finish,
    parallel_tool_calls_arrive_complete_and_in_order,
    invalid_tool_arguments_are_passed_through_raw,
    the_request_body_is_the_reviewed_snapshot,
    tool_schemas_take_the_form_the_provider_accepts,
    no_api_key_sends_no_key,
    rate_limit_with_retry_after_is_retried_after_waiting,
    server_errors_exhaust_the_retries,
    client_errors_are_not_retried_and_never_show_the_key,
    a_stream_cut_short_is_a_protocol_error,
    dropping_the_stream_midway_stops_reading,
    slow_first_byte_is_a_timeout,
    connection_refused_is_retried_then_a_connect_error,
);

/// Every event of one call of `adapter` to `model` with `simple_request`.
async fn events_of(adapter: Adapter, model: &ScriptedModel) -> Vec<Result<ModelEvent, ModelError>> {
    collect(
        adapter
            .against(model)
            .stream(simple_request())
            .await
            .expect("stream starts"),
    )
    .await
}

async fn streamed_text_reassembles_with_usage_and_finish(adapter: Adapter) {
    let text = "Streaming text arrives in many small pieces.";
    let model = ScriptedModel::start(vec![Turn::Text(text.into())])
        .await
        .expect("starts");
    let events = events_of(adapter, &model).await;

    assert_eq!(text_of(&events), text);
    let deltas = events
        .iter()
        .filter(|event| matches!(event, Ok(ModelEvent::TextDelta(_))))
        .count();
    assert!(deltas > 1, "text came in {deltas} pieces");
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

async fn parallel_tool_calls_arrive_complete_and_in_order(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![
        ScriptedToolCall::new("call_a", "search", r#"{"query":"streams in rust"}"#),
        ScriptedToolCall::new("call_b", "fetch", r#"{"url":"http://example.test/page"}"#),
    ])])
    .await
    .expect("starts");
    let events: Vec<ModelEvent> = events_of(adapter, &model)
        .await
        .into_iter()
        .map(|event| event.expect("no errors"))
        .collect();
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

async fn invalid_tool_arguments_are_passed_through_raw(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![ScriptedToolCall::new(
        "call_x",
        "echo",
        "{\"text\": oops",
    )])])
    .await
    .expect("starts");
    let events = events_of(adapter, &model).await;
    assert!(
        events.contains(&Ok(ModelEvent::ToolCall(ToolCall {
            id: "call_x".into(),
            name: "echo".into(),
            arguments: "{\"text\": oops".into(),
        }))),
        "{events:?}"
    );
    model.shutdown().await;
}

async fn the_request_body_is_the_reviewed_snapshot(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let _ = collect(
        adapter
            .against(&model)
            .stream(tool_round_request())
            .await
            .expect("stream starts"),
    )
    .await;
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_matches_snapshot(&adapter.snapshot(), &requests[0]);
    model.shutdown().await;
}

/// Schemas as MCP servers write them (`$ref`, `oneOf`, formats, open
/// objects, a choice at the root) reach the scripted provider, which refuses
/// what the real one refuses, in the form it accepts; the form is the
/// reviewed snapshot.
async fn tool_schemas_take_the_form_the_provider_accepts(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let mut request = simple_request();
    request.tools = Arc::from([
        ToolSpec {
            name: "book_meeting".into(),
            description: "Books a meeting".into(),
            parameters: kitchen_sink(),
        },
        ToolSpec {
            name: "find_user".into(),
            description: "Finds a user".into(),
            parameters: serde_json::json!({
                "type": "object",
                "oneOf": [
                    {"properties": {"id": {"type": "integer"}}, "required": ["id"]},
                    {"properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]}
                ]
            }),
        },
    ]);
    let events = collect(
        adapter
            .against(&model)
            .stream(request)
            .await
            .expect("stream starts"),
    )
    .await;
    assert_eq!(
        text_of(&events),
        "ok",
        "the provider took the schemas: {events:?}"
    );
    let requests = model.requests();
    assert_matches_snapshot(&adapter.schema_snapshot(), &requests[0]["tools"]);
    model.shutdown().await;
}

async fn no_api_key_sends_no_key(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::Text("ok".into())])
        .await
        .expect("starts");
    let mut config = config(adapter.kind(), model.base_url());
    config.api_key = None;
    let provider = build_provider(&config, http());
    let _ = collect(provider.stream(simple_request()).await.expect("starts")).await;
    let headers = &model.request_headers()[0];
    for name in KEY_HEADERS {
        assert!(headers.get(name).is_none(), "{name} was sent");
    }
    model.shutdown().await;
}

async fn rate_limit_with_retry_after_is_retried_after_waiting(adapter: Adapter) {
    let model = ScriptedModel::start(vec![
        Turn::Error {
            status: 429,
            body: adapter.rate_limit_body().into(),
            retry_after: Some(1),
        },
        Turn::Text("after the wait".into()),
    ])
    .await
    .expect("starts");
    let started = Instant::now();
    let events = collect(
        adapter
            .against(&model)
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

async fn server_errors_exhaust_the_retries(adapter: Adapter) {
    let failure = Turn::Error {
        status: 500,
        body: "internal trouble".into(),
        retry_after: None,
    };
    let model = ScriptedModel::start(vec![failure.clone(), failure.clone(), failure])
        .await
        .expect("starts");
    let error = adapter
        .against(&model)
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

async fn client_errors_are_not_retried_and_never_show_the_key(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 401,
        body: adapter.unauthorized_body(),
        retry_after: None,
    }])
    .await
    .expect("starts");
    let provider = adapter.against(&model);
    let error = provider
        .stream(simple_request())
        .await
        .err()
        .expect("unauthorized");
    assert!(matches!(error, ModelError::Http { status: 401, .. }));
    let shown = error.to_string();
    assert!(!shown.contains(API_KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(
        !format!("{provider:?}").contains(API_KEY),
        "debug hides the key"
    );
    assert_eq!(model.requests().len(), 1);
    model.shutdown().await;
}

async fn a_stream_cut_short_is_a_protocol_error(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::Error {
        status: 200,
        body: adapter.cut_short_stream().into(),
        retry_after: None,
    }])
    .await
    .expect("starts");
    let events = events_of(adapter, &model).await;
    assert!(
        matches!(events.last(), Some(Err(ModelError::Protocol(_)))),
        "{events:?}"
    );
    model.shutdown().await;
}

async fn dropping_the_stream_midway_stops_reading(adapter: Adapter) {
    let model = ScriptedModel::start(vec![
        Turn::Text("a long answer ".repeat(200)),
        Turn::Text("next".into()),
    ])
    .await
    .expect("starts");
    let provider = adapter.against(&model);
    let mut stream = provider.stream(simple_request()).await.expect("starts");
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(_)))));
    drop(stream);

    let events = collect(provider.stream(simple_request()).await.expect("starts")).await;
    assert_eq!(text_of(&events), "next");
    model.shutdown().await;
}

async fn slow_first_byte_is_a_timeout(adapter: Adapter) {
    let model = ScriptedModel::start(vec![Turn::Delay(
        Duration::from_secs(30),
        Box::new(Turn::Text("too late".into())),
    )])
    .await
    .expect("starts");
    let mut config = config(adapter.kind(), model.base_url());
    config.connect_timeout = Duration::from_millis(100);
    config.request_timeout = Duration::from_millis(200);
    let error = build_provider(&config, http())
        .stream(simple_request())
        .await
        .err()
        .expect("times out");
    assert_eq!(error, ModelError::Timeout);
    assert_eq!(model.requests().len(), 1, "timeouts are not retried");
    model.shutdown().await;
}

async fn connection_refused_is_retried_then_a_connect_error(adapter: Adapter) {
    // Bind and release a port so that nothing listens on it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = listener.local_addr().expect("has an address");
    drop(listener);
    let config = config(adapter.kind(), format!("http://{addr}/v1"));
    let error = adapter
        .with_config(&config, 1)
        .stream(simple_request())
        .await
        .err()
        .expect("nothing listens");
    assert!(matches!(error, ModelError::Connect(_)), "{error:?}");
    assert!(!error.to_string().contains(API_KEY));
}
