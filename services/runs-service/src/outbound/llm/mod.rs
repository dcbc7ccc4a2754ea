//! Model providers: the [`ModelProvider`] port over HTTP, for OpenAI-compatible
//! servers and for Anthropic.

mod anthropic;
mod config;
mod limits;
mod openai;
mod retry;
mod schema;

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
};

use eventsource_stream::{Event, EventStreamError, Eventsource as _};
use futures::{StreamExt as _, stream::BoxStream};
use reqwest::header;

use tokio::time::Instant;

pub use self::{
    anthropic::Anthropic,
    config::{
        DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT, ProviderConfig,
        ProviderKind, parse_providers,
    },
    limits::{
        DEFAULT_CALL_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_EVENT_BYTES,
        DEFAULT_MAX_RESPONSE_BYTES, StreamLimits,
    },
    openai::OpenAiCompatible,
};
use self::{
    limits::{BoundedError, bounded_events},
    retry::RequestPhase,
};
use crate::domain::{
    model::{ModelError, ModelEvent, StreamLimit},
    ports::{ModelProvider, ModelStream},
};

/// Builds the adapter for `config`, sending its requests through `http`.
pub fn build_provider(config: &ProviderConfig, http: reqwest::Client) -> Arc<dyn ModelProvider> {
    match config.kind {
        ProviderKind::OpenAiCompatible => Arc::new(OpenAiCompatible::new(config, http)),
        ProviderKind::Anthropic => Arc::new(Anthropic::new(config, http)),
    }
}

/// The configured model providers, by name.
#[derive(Debug, Clone, Default)]
pub struct ModelRegistry {
    /// Providers by their configured name.
    pub providers: HashMap<String, Arc<dyn ModelProvider>>,
}

impl ModelRegistry {
    /// Builds every configured provider, all sharing `http`.
    pub fn from_configs(configs: &[ProviderConfig], http: &reqwest::Client) -> Self {
        let providers = configs
            .iter()
            .map(|config| (config.name.clone(), build_provider(config, http.clone())))
            .collect();
        Self { providers }
    }

    /// The provider named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn ModelProvider>> {
        self.providers.get(name).cloned()
    }
}

impl crate::domain::ports::ModelProviders for ModelRegistry {
    fn provider(&self, name: &str) -> Option<Arc<dyn ModelProvider>> {
        self.get(name)
    }
}

/// Turns a provider's wire events into [`ModelEvent`]s.
trait StreamDecoder: Send + 'static {
    /// Handles one server-sent event, pushing what it yields to `out`.
    /// Returns whether the answer is complete.
    fn event(&mut self, event: &Event, out: &mut VecDeque<ModelEvent>) -> Result<bool, ModelError>;

    /// The stream ended before the decoder saw the answer complete.
    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;
}

/// The server-sent events of a response, each bounded in size.
type Events = BoxStream<'static, Result<Event, EventStreamError<BoundedError<reqwest::Error>>>>;

/// Reads `response` as server-sent events through `decoder`, within
/// `limits`: each event must arrive within the idle timeout and the whole
/// call end by `deadline`. The stream ends after the first error; dropping
/// it drops the response, which closes the connection.
fn decode_stream<D: StreamDecoder>(
    response: reqwest::Response,
    decoder: D,
    phase: RequestPhase,
    limits: StreamLimits,
    deadline: Instant,
) -> ModelStream {
    let state = Decoding {
        events: bounded_events(response.bytes_stream(), limits.max_event_bytes)
            .eventsource()
            .boxed(),
        decoder,
        pending: VecDeque::new(),
        phase,
        limits,
        deadline,
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((Ok(event), state));
            }
            if state.done {
                return None;
            }
            let outcome = match state.next_event().await {
                Ok(Some(event)) => state.decoder.event(&event, &mut state.pending),
                Ok(None) => state.decoder.end(&mut state.pending).map(|()| true),
                Err(error) => Err(error),
            };
            match outcome {
                Ok(false) => {}
                Ok(true) => {
                    state.done = true;
                    // Nothing after the end of the answer matters; let the
                    // connection go now.
                    state.events = futures::stream::empty().boxed();
                }
                Err(error) => {
                    tracing::warn!(provider = %state.phase.provider, %error, "model stream failed");
                    state.done = true;
                    state.pending.clear();
                    state.events = futures::stream::empty().boxed();
                    return Some((Err(error), state));
                }
            }
        }
    })
    .boxed()
}

/// A response being decoded.
struct Decoding<D> {
    events: Events,
    decoder: D,
    pending: VecDeque<ModelEvent>,
    phase: RequestPhase,
    limits: StreamLimits,
    /// When the whole call must be over.
    deadline: Instant,
    done: bool,
}

impl<D> Decoding<D> {
    /// The next server-sent event, `None` at the end of the body.
    async fn next_event(&mut self) -> Result<Option<Event>, ModelError> {
        let now = Instant::now();
        // Checked before waiting: a stream that always has an event ready
        // would never let a timer fire.
        if now >= self.deadline {
            return Err(ModelError::Limit(StreamLimit::CallTime(
                self.limits.call_timeout,
            )));
        }
        let idle_at = now + self.limits.idle_timeout;
        let wait_until = idle_at.min(self.deadline);
        match tokio::time::timeout_at(wait_until, self.events.next()).await {
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(error))) => Err(stream_error(&self.phase, error)),
            Ok(None) => Ok(None),
            Err(_elapsed) if wait_until == self.deadline => Err(ModelError::Limit(
                StreamLimit::CallTime(self.limits.call_timeout),
            )),
            Err(_elapsed) => Err(ModelError::Limit(StreamLimit::Idle(
                self.limits.idle_timeout,
            ))),
        }
    }
}

fn stream_error(
    phase: &RequestPhase,
    error: EventStreamError<BoundedError<reqwest::Error>>,
) -> ModelError {
    match error {
        EventStreamError::Utf8(error) => {
            ModelError::Protocol(format!("stream is not utf-8: {error}"))
        }
        EventStreamError::Parser(error) => ModelError::Protocol(
            phase.redact(&format!("stream is not server-sent events: {error}")),
        ),
        EventStreamError::Transport(BoundedError::Limit(error)) => error,
        EventStreamError::Transport(BoundedError::Body(error)) => phase.transport_error(&error),
    }
}

/// Sends the request built by `build` (with retries) and decodes its
/// stream through `decoder`, all within the call's time limit.
async fn start_stream<D: StreamDecoder>(
    phase: &RequestPhase,
    limits: StreamLimits,
    build: impl Fn() -> reqwest::RequestBuilder,
    decoder: D,
) -> Result<ModelStream, ModelError> {
    let deadline = Instant::now() + limits.call_timeout;
    let response = tokio::time::timeout_at(deadline, phase.send(build))
        .await
        .map_err(|_elapsed| ModelError::Limit(StreamLimit::CallTime(limits.call_timeout)))??;
    let response = expect_event_stream(response, phase).await?;
    Ok(decode_stream(
        response,
        decoder,
        phase.clone(),
        limits,
        deadline,
    ))
}

/// Checks that a successful response is an event stream and not, say, a
/// whole JSON answer from a server that ignores `stream: true`.
async fn expect_event_stream(
    response: reqwest::Response,
    phase: &RequestPhase,
) -> Result<reqwest::Response, ModelError> {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json {
        let body = phase.body_excerpt(response).await;
        return Err(ModelError::Protocol(format!(
            "expected an event stream, got json: {body}"
        )));
    }
    Ok(response)
}

/// Parses one event's JSON data.
fn parse_data<T: serde::de::DeserializeOwned>(data: &str) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|error| {
        ModelError::Protocol(format!(
            "event data is not the expected json ({error}): {}",
            retry::excerpt(data)
        ))
    })
}

#[cfg(test)]
mod provider_suite;
#[cfg(test)]
mod snapshot;

#[cfg(test)]
pub(crate) mod test_support {
    //! Shared by the adapters' tests.

    use std::time::Duration;

    use std::sync::Arc;

    use futures::StreamExt as _;
    use secrecy::SecretString;

    use super::{ProviderConfig, ProviderKind, retry::RetryPolicy};
    use crate::domain::{
        model::{ChatMessage, ChatRequest, ModelError, ModelEvent, ToolCall, ToolSpec},
        ports::ModelStream,
    };

    pub(crate) const API_KEY: &str = "sk-switchboard-test-0123456789";

    pub(crate) fn http() -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .build()
            .expect("the client needs no configuration that can fail")
    }

    pub(crate) fn config(kind: ProviderKind, base_url: String) -> ProviderConfig {
        ProviderConfig {
            api_key: Some(SecretString::from(API_KEY)),
            max_retries: 2,
            ..ProviderConfig::new("test", kind, base_url)
        }
    }

    /// Backoff short enough for tests, long enough to be a real backoff.
    pub(crate) fn quick_retries(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            min_delay: Duration::from_millis(20),
            max_delay: Duration::from_secs(5),
        }
    }

    pub(crate) fn echo_tool() -> ToolSpec {
        ToolSpec {
            name: "echo".into(),
            description: "Echoes its text".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            }),
        }
    }

    pub(crate) fn simple_request() -> ChatRequest {
        ChatRequest {
            model: "test-model".into(),
            system: None,
            messages: vec![ChatMessage::User { text: "hi".into() }],
            tools: Arc::from([]),
            max_tokens: 1024,
        }
    }

    /// A conversation that went through one round of two parallel tool calls.
    pub(crate) fn tool_round_request() -> ChatRequest {
        ChatRequest {
            model: "test-model".into(),
            system: Some("You are terse.".into()),
            messages: vec![
                ChatMessage::User {
                    text: "echo twice".into(),
                },
                ChatMessage::Assistant {
                    text: "calling".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "call_1".into(),
                            name: "echo".into(),
                            arguments: r#"{"text":"a"}"#.into(),
                        },
                        ToolCall {
                            id: "call_2".into(),
                            name: "echo".into(),
                            arguments: r#"{"text":"b"}"#.into(),
                        },
                    ],
                },
                ChatMessage::ToolResult {
                    call_id: "call_1".into(),
                    name: "echo".into(),
                    content: "a".into(),
                    is_error: false,
                },
                ChatMessage::ToolResult {
                    call_id: "call_2".into(),
                    name: "echo".into(),
                    content: "boom".into(),
                    is_error: true,
                },
            ],
            tools: Arc::from([echo_tool()]),
            max_tokens: 256,
        }
    }

    /// Every item of the stream, stopping after the first error.
    pub(crate) async fn collect(mut stream: ModelStream) -> Vec<Result<ModelEvent, ModelError>> {
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            let failed = item.is_err();
            items.push(item);
            if failed {
                break;
            }
        }
        items
    }

    pub(crate) fn text_of(events: &[Result<ModelEvent, ModelError>]) -> String {
        events
            .iter()
            .filter_map(|event| match event {
                Ok(ModelEvent::TextDelta(text)) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}
