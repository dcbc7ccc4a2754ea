//! Anthropic Messages.

use std::collections::{HashMap, VecDeque};

use eventsource_stream::Event;
use reqwest::header::{HeaderName, HeaderValue};
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    ProviderConfig, StreamDecoder, StreamLimits,
    limits::ResponseBudget,
    parse_data,
    retry::{RequestPhase, RetryPolicy, excerpt},
    start_stream,
};
use crate::domain::{
    model::{ChatMessage, ChatRequest, FinishReason, ModelError, ModelEvent, TokenUsage, ToolCall},
    ports::{ModelProvider, ModelStream},
};

/// The Messages API version this adapter speaks.
const API_VERSION: &str = "2023-06-01";
/// Opens a conversation whose history starts with a model turn.
const EARLIER_MESSAGES_LEFT_OUT: &str = "(The earlier messages of this conversation are left out.)";

static API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");
static VERSION_HEADER: HeaderName = HeaderName::from_static("anthropic-version");

/// A provider speaking the Anthropic Messages API at `{base_url}/messages`.
#[derive(Debug, Clone)]
pub struct Anthropic {
    endpoint: String,
    api_key: Option<SecretString>,
    http: reqwest::Client,
    phase: RequestPhase,
    limits: StreamLimits,
}

impl Anthropic {
    /// The adapter for `config`, sending its requests through `http`.
    pub fn new(config: &ProviderConfig, http: reqwest::Client) -> Self {
        Self {
            endpoint: format!("{}/messages", config.base_url.trim_end_matches('/')),
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

    /// The `x-api-key` header value, marked sensitive so it stays out of
    /// debug output.
    fn api_key_header(&self) -> Result<Option<HeaderValue>, ModelError> {
        let Some(key) = &self.api_key else {
            return Ok(None);
        };
        let mut value = HeaderValue::from_str(key.expose_secret()).map_err(|_| {
            ModelError::Protocol("the api key cannot be sent in an http header".into())
        })?;
        value.set_sensitive(true);
        Ok(Some(value))
    }
}

#[async_trait::async_trait]
impl ModelProvider for Anthropic {
    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ModelError> {
        let body = request_body(&request);
        let api_key = self.api_key_header()?;
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
                .header(VERSION_HEADER.clone(), API_VERSION)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(&body);
            match &api_key {
                Some(key) => builder.header(API_KEY_HEADER.clone(), key.clone()),
                None => builder,
            }
        };
        let decoder = Decoder::new(self.limits.max_response_bytes);
        start_stream(&self.phase, self.limits, build, decoder).await
    }
}

/// The Messages request for `request`.
fn request_body(request: &ChatRequest) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message {
            ChatMessage::User { text } => messages.push(json!({"role": "user", "content": text})),
            ChatMessage::Assistant { text, tool_calls } => {
                let mut content = Vec::with_capacity(tool_calls.len() + 1);
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                content.extend(tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": tool_input(&call.arguments),
                    })
                }));
                // The API rejects empty assistant turns; one says nothing.
                if !content.is_empty() {
                    messages.push(json!({"role": "assistant", "content": content}));
                }
            }
            ChatMessage::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let block = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": is_error,
                });
                // All results of one round must answer in a single user
                // message right after the assistant's tool calls.
                match messages.last_mut() {
                    Some(last) if holds_only_tool_results(last) => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    // The API wants the conversation to open with the user; a history cut
    // to its newest part may open with a model turn instead.
    if messages
        .first()
        .is_some_and(|first| first["role"] != "user")
    {
        messages.insert(
            0,
            json!({"role": "user", "content": EARLIER_MESSAGES_LEFT_OUT}),
        );
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
        "stream": true,
    });
    if let Some(system) = &request.system {
        body["system"] = system.as_str().into();
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
    }
    body
}

fn holds_only_tool_results(message: &Value) -> bool {
    message["role"] == "user"
        && message["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().all(|block| block["type"] == "tool_result"))
}

/// Tool-call arguments as the JSON object `tool_use.input` must be. Arguments
/// that are not an object (the model may produce broken JSON) become `{}`:
/// the tool result already told the model what was wrong with them.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(input)) => Value::Object(input),
        _ => Value::Object(Map::new()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<UsageDelta>,
    },
    MessageStop,
    Error {
        error: ApiError,
    },
    /// `ping` and event types added after this adapter was written.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<UsageDelta>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    /// Thinking and other blocks that carry nothing for the caller.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct UsageDelta {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A `tool_use` block whose input is still arriving.
#[derive(Debug)]
struct PartialToolUse {
    id: String,
    name: String,
    /// `input` of `content_block_start`, used when no delta follows.
    initial_input: Option<Value>,
    json: String,
}

/// Reassembles a Messages stream: text as it comes, each tool call when its
/// block stops, usage, then [`ModelEvent::Finished`] last.
#[derive(Debug)]
struct Decoder {
    tool_uses: HashMap<u64, PartialToolUse>,
    usage: TokenUsage,
    stop_reason: Option<String>,
    saw_tool_use: bool,
    /// What the answer's text and tool inputs may still grow by.
    budget: ResponseBudget,
}

impl Decoder {
    /// A decoder of an answer of at most `max_response_bytes` of text and
    /// tool inputs.
    fn new(max_response_bytes: usize) -> Self {
        Self {
            tool_uses: HashMap::new(),
            usage: TokenUsage::default(),
            stop_reason: None,
            saw_tool_use: false,
            budget: ResponseBudget::new(max_response_bytes),
        }
    }

    fn handle(
        &mut self,
        event: StreamEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<bool, ModelError> {
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.add_usage(&usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                ContentBlock::Text { text } if !text.is_empty() => {
                    self.budget.charge(text.len())?;
                    out.push_back(ModelEvent::TextDelta(text));
                }
                ContentBlock::ToolUse { id, name, input } => {
                    let input_bytes = input
                        .as_ref()
                        .filter(|input| !input.is_null())
                        .map_or(0, |input| input.to_string().len());
                    self.budget.charge(id.len() + name.len() + input_bytes)?;
                    self.tool_uses.insert(
                        index,
                        PartialToolUse {
                            id,
                            name,
                            initial_input: input,
                            json: String::new(),
                        },
                    );
                }
                ContentBlock::Text { .. } | ContentBlock::Other => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } if !text.is_empty() => {
                    self.budget.charge(text.len())?;
                    out.push_back(ModelEvent::TextDelta(text));
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    self.budget.charge(partial_json.len())?;
                    let tool_use = self.tool_uses.get_mut(&index).ok_or_else(|| {
                        ModelError::Protocol(format!(
                            "input_json_delta for block {index}, which is not a tool_use"
                        ))
                    })?;
                    tool_use.json.push_str(&partial_json);
                }
                BlockDelta::TextDelta { .. } | BlockDelta::Other => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if let Some(tool_use) = self.tool_uses.remove(&index) {
                    self.saw_tool_use = true;
                    out.push_back(ModelEvent::ToolCall(complete_tool_use(tool_use)));
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.add_usage(&usage);
                }
            }
            StreamEvent::MessageStop => {
                if let Some(index) = self.tool_uses.keys().next() {
                    return Err(ModelError::Protocol(format!(
                        "message stopped inside tool_use block {index}"
                    )));
                }
                out.push_back(ModelEvent::Usage(self.usage));
                let reason = match self.stop_reason.as_deref() {
                    Some(reason) => stop_reason(reason),
                    None if self.saw_tool_use => FinishReason::ToolCalls,
                    None => FinishReason::Stop,
                };
                out.push_back(ModelEvent::Finished { reason });
                return Ok(true);
            }
            StreamEvent::Error { error } => return Err(api_error(&error)),
            StreamEvent::Other => {}
        }
        Ok(false)
    }

    /// Usage counts in the stream are cumulative, so later values replace
    /// earlier ones.
    fn add_usage(&mut self, usage: &UsageDelta) {
        if let Some(input) = usage.input_tokens {
            self.usage.input_tokens = input;
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}

impl StreamDecoder for Decoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<ModelEvent>) -> Result<bool, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        self.handle(parse_data(data)?, out)
    }

    fn end(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        Err(ModelError::Protocol(
            "stream ended before message_stop".into(),
        ))
    }
}

fn complete_tool_use(tool_use: PartialToolUse) -> ToolCall {
    // A tool without parameters streams no input deltas; its input is the
    // (empty) object of the block start.
    let arguments = if tool_use.json.is_empty() {
        tool_use
            .initial_input
            .filter(|input| !input.is_null())
            .map_or_else(|| "{}".to_owned(), |input| input.to_string())
    } else {
        tool_use.json
    };
    ToolCall {
        id: tool_use.id,
        name: tool_use.name,
        arguments,
    }
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// An `error` event sent after the stream began, as the HTTP status the same
/// error has before streaming.
fn api_error(error: &ApiError) -> ModelError {
    let status = match error.kind.as_str() {
        "rate_limit_error" => return ModelError::RateLimited { retry_after: None },
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "overloaded_error" => 529,
        _ => 500,
    };
    ModelError::Http {
        status,
        body: excerpt(&format!("{}: {}", error.kind, error.message)),
    }
}

#[cfg(test)]
mod tests;
