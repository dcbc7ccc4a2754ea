//! OpenAI Chat Completions, as spoken by OpenAI, Ollama, vLLM, llama.cpp and
//! other compatible servers.

mod tools;

use std::collections::{BTreeMap, HashMap, VecDeque};

use eventsource_stream::Event;
use reqwest::header;
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::tools::{OutTool, tools_body};
use super::{
    ProviderConfig, StreamDecoder, StreamLimits,
    limits::ResponseBudget,
    parse_data,
    retry::{RequestPhase, RetryPolicy},
    schema::NullFields,
    start_stream,
};
use crate::domain::{
    model::{ChatMessage, ChatRequest, FinishReason, ModelError, ModelEvent, TokenUsage, ToolCall},
    ports::{ModelProvider, ModelStream},
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
    strict_tools: bool,
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
            strict_tools: config.strict_tools,
        }
    }

    #[cfg(test)]
    pub(super) fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.phase.retry = retry;
        self
    }
}

#[async_trait::async_trait]
impl ModelProvider for OpenAiCompatible {
    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ModelError> {
        let (body, nulls) = request_body(&request, self.strict_tools);
        let body = serde_json::to_vec(&body)
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
        let decoder = Decoder::new(self.limits.max_response_bytes, nulls);
        start_stream(&self.phase, self.limits, build, decoder).await
    }
}

/// The Chat Completions request for `request`, borrowing from it: the
/// history and the schemas sent as they are are written out, never copied.
/// With `strict_tools`, every tool whose schema has a strict form is sent
/// in it; the `null`s its arguments will carry for left-out properties come
/// back by tool name.
fn request_body(
    request: &ChatRequest,
    strict_tools: bool,
) -> (Body<'_>, HashMap<String, NullFields>) {
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
    let (tools, nulls) = tools_body(request, strict_tools);
    let body = Body {
        model: &request.model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools,
        // `max_tokens` rather than `max_completion_tokens`: compatible
        // servers know the older name.
        max_tokens: request.max_tokens,
    };
    (body, nulls)
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
    /// Per strict tool, the `null`s that stand for left-out properties.
    nulls: HashMap<String, NullFields>,
}

impl Decoder {
    /// A decoder of an answer of at most `max_response_bytes` of text and
    /// tool calls, taking `nulls` out of the strict tools' arguments.
    fn new(max_response_bytes: usize, nulls: HashMap<String, NullFields>) -> Self {
        Self {
            calls: BTreeMap::new(),
            finish: None,
            emitted_calls: false,
            budget: ResponseBudget::new(max_response_bytes),
            nulls,
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
            let arguments = match self.nulls.get(&call.name) {
                Some(nulls) => nulls.arguments_for_server(call.arguments),
                None => call.arguments,
            };
            out.push_back(ModelEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments,
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
mod tests;
