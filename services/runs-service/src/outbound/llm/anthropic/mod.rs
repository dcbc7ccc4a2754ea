//! Anthropic Messages.

use reqwest::header::{HeaderName, HeaderValue};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Map, Value, json};

use self::stream::Decoder;
use super::{
    ProviderConfig, StreamLimits,
    retry::{RequestPhase, RetryPolicy},
    schema::anthropic_form,
    start_stream,
};

mod stream;
use crate::domain::{
    model::{ChatMessage, ChatRequest, ModelError},
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
    pub(super) fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
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

/// The conversation as Messages API messages.
fn messages(history: &[ChatMessage]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::with_capacity(history.len());
    for message in history {
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
    messages
}

/// The Messages request for `request`.
fn request_body(request: &ChatRequest) -> Value {
    let messages = messages(&request.messages);
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
                    "input_schema": anthropic_form(&tool.parameters),
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

#[cfg(test)]
mod tests;
