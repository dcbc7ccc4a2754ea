//! The Messages API's event stream as model events.

use std::collections::{HashMap, VecDeque};

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::Value;

use super::super::{StreamDecoder, limits::ResponseBudget, parse_data, retry::excerpt};
use crate::domain::model::{FinishReason, ModelError, ModelEvent, TokenUsage, ToolCall};

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
pub(super) struct Decoder {
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
    pub(super) fn new(max_response_bytes: usize) -> Self {
        Self {
            tool_uses: HashMap::new(),
            usage: TokenUsage::default(),
            stop_reason: None,
            saw_tool_use: false,
            budget: ResponseBudget::new(max_response_bytes),
        }
    }

    /// A content block began: text is passed on, a tool use is collected.
    fn block_started(
        &mut self,
        index: u64,
        content_block: ContentBlock,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        match content_block {
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
        }
        Ok(())
    }

    /// More of a content block: text is passed on, tool input collected.
    fn block_delta(
        &mut self,
        index: u64,
        delta: BlockDelta,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        match delta {
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
        }
        Ok(())
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
            } => self.block_started(index, content_block, out)?,
            StreamEvent::ContentBlockDelta { index, delta } => {
                self.block_delta(index, delta, out)?;
            }
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
