//! OpenAI Chat Completions, as spoken by OpenAI, Ollama, vLLM, llama.cpp and
//! other compatible servers.

use std::collections::{BTreeMap, VecDeque};

use eventsource_stream::Event;
use reqwest::header;
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ProviderConfig, StreamDecoder, StreamLimits,
    limits::ResponseBudget,
    parse_data,
    retry::{RequestPhase, RetryPolicy},
    start_stream,
};
use crate::domain::model::{
    ChatMessage, ChatRequest, FinishReason, ModelError, ModelEvent, ModelProvider, ModelStream,
    TokenUsage, ToolCall,
};

/// A provider speaking OpenAI Chat Completions at `{base_url}/chat/completions`.
///
/// Sends `Authorization: Bearer KEY` only when a key is configured, since
/// local servers need none.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    endpoint: String,
    api_key: Option<SecretString>,
    http: reqwest::Client,
    phase: RequestPhase,
    limits: StreamLimits,
}

impl OpenAiCompatible {
    /// The adapter for `config`, sending its requests through `http`.
    pub fn new(config: &ProviderConfig, http: reqwest::Client) -> Self {
        Self {
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            api_key: config.api_key.clone(),
            http,
            phase: RequestPhase {
                provider: config.name.clone(),
                deadline: config.connect_timeout + config.request_timeout,
                retry: RetryPolicy::new(config.max_retries),
                api_key: config.api_key.clone(),
            },
            limits: config.limits,
        }
    }

    #[cfg(test)]
    fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.phase.retry = retry;
        self
    }
}

#[async_trait::async_trait]
impl ModelProvider for OpenAiCompatible {
    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ModelError> {
        let body = serde_json::to_vec(&request_body(&request))
            .map_err(|e| ModelError::Protocol(format!("the request could not be encoded: {e}")))?;
        tracing::debug!(
            provider = %self.phase.provider,
            model = %request.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "starting model call"
        );
        let build = || {
            let builder = self
                .http
                .post(&self.endpoint)
                .header(header::ACCEPT, "text/event-stream")
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            match &self.api_key {
                Some(key) => builder.bearer_auth(key.expose_secret()),
                None => builder,
            }
        };
        let decoder = Decoder::new(self.limits.max_response_bytes);
        start_stream(&self.phase, self.limits, build, decoder).await
    }
}

/// The Chat Completions request for `request`, borrowing from it: the
/// tools' schemas and the history are written out, never copied.
fn request_body(request: &ChatRequest) -> Body<'_> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(OutMessage::System { content: system });
    }
    for message in &request.messages {
        messages.push(match message {
            ChatMessage::User { text } => OutMessage::User { content: text },
            ChatMessage::Assistant { text, tool_calls } => OutMessage::Assistant {
                // Some servers reject an empty string next to tool calls.
                content: (tool_calls.is_empty() || !text.is_empty()).then_some(text.as_str()),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| OutToolCall {
                        id: &call.id,
                        kind: "function",
                        function: OutFunctionCall {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
            },
            // The API has no error flag; the content says what went wrong.
            ChatMessage::ToolResult {
                call_id, content, ..
            } => OutMessage::Tool {
                tool_call_id: call_id,
                content,
            },
        });
    }
    Body {
        model: &request.model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request
            .tools
            .iter()
            .map(|tool| OutTool {
                kind: "function",
                function: OutFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        // `max_tokens` rather than `max_completion_tokens`: compatible
        // servers know the older name.
        max_tokens: request.max_tokens,
    }
}

#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<OutTool<'a>>,
    max_tokens: u32,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum OutMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<OutToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Debug, Serialize)]
struct OutToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct OutFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct OutTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutFunction<'a>,
}

#[derive(Debug, Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// A tool call whose fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Reassembles a Chat Completions stream: text as it comes, tool calls once
/// the model has finished them, usage, then [`ModelEvent::Finished`] last.
#[derive(Debug)]
struct Decoder {
    /// Tool calls by their `index`, so they come out in index order.
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<FinishReason>,
    emitted_calls: bool,
    /// What the answer's text and tool calls may still grow by.
    budget: ResponseBudget,
}

impl Decoder {
    /// A decoder of an answer of at most `max_response_bytes` of text and
    /// tool calls.
    fn new(max_response_bytes: usize) -> Self {
        Self {
            calls: BTreeMap::new(),
            finish: None,
            emitted_calls: false,
            budget: ResponseBudget::new(max_response_bytes),
        }
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            return Err(mid_stream_error(&error));
        }
        // Only the first choice is used; requests never ask for more.
        if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                    self.budget.charge(text.len())?;
                    out.push_back(ModelEvent::TextDelta(text));
                }
                for (position, fragment) in
                    delta.tool_calls.unwrap_or_default().into_iter().enumerate()
                {
                    self.add_fragment(position, fragment)?;
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
                self.flush_calls(out)?;
            }
        }
        // Usage comes in its own chunk after the finish reason, or, with
        // some servers, in the same chunk.
        if let Some(usage) = chunk.usage {
            out.push_back(ModelEvent::Usage(TokenUsage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            }));
        }
        Ok(())
    }

    fn add_fragment(&mut self, position: usize, fragment: ToolCallDelta) -> Result<(), ModelError> {
        let fragment_bytes = fragment.id.as_ref().map_or(0, String::len)
            + fragment.function.as_ref().map_or(0, |function| {
                function.name.as_ref().map_or(0, String::len)
                    + function.arguments.as_ref().map_or(0, String::len)
            });
        self.budget.charge(fragment_bytes)?;
        // Servers that send each call whole may leave out `index`.
        let index = fragment
            .index
            .unwrap_or_else(|| u64::try_from(position).unwrap_or(u64::MAX));
        let call = self.calls.entry(index).or_default();
        if let Some(id) = fragment.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            // Names come whole in the first fragment; some servers repeat
            // them in later ones.
            if let Some(name) = function.name.filter(|name| !name.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        Ok(())
    }

    fn flush_calls(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        for (index, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() {
                return Err(ModelError::Protocol(format!(
                    "tool call {index} has no name"
                )));
            }
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            self.emitted_calls = true;
            out.push_back(ModelEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            }));
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        self.flush_calls(out)?;
        let reason = self.finish.take().unwrap_or(if self.emitted_calls {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        out.push_back(ModelEvent::Finished { reason });
        Ok(())
    }
}

impl StreamDecoder for Decoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<ModelEvent>) -> Result<bool, ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(out)?;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        self.chunk(parse_data(data)?, out)?;
        Ok(false)
    }

    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        // Some servers close the stream without `[DONE]`; a finish reason
        // still marks the answer complete.
        if self.finish.is_none() {
            return Err(ModelError::Protocol(
                "stream ended before the model finished".into(),
            ));
        }
        self.finish(out)
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// An `{"error": …}` chunk sent after the stream began.
fn mid_stream_error(error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code))
        .unwrap_or(500);
    ModelError::Http {
        status,
        body: super::retry::excerpt(&message),
    }
}

#[cfg(test)]
mod tests {
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
}
