//! What a run exchanges with a language model, independent of any
//! provider's wire format (the port itself is `ports::ModelProvider`).

use std::sync::Arc;

use std::time::Duration;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    /// Name the model uses to call the tool.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema object of the tool's arguments.
    pub parameters: serde_json::Value,
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    /// Id that the matching [`ChatMessage::ToolResult`] echoes.
    pub id: String,
    /// Name of the tool to call.
    pub name: String,
    /// Arguments as raw JSON text, exactly as the model produced it; it may
    /// not be valid JSON.
    pub arguments: String,
}

/// One message of a conversation with the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatMessage {
    /// What the user said.
    User {
        /// The user's text.
        text: String,
    },
    /// What the model answered earlier.
    Assistant {
        /// The model's text, possibly empty when it only called tools.
        text: String,
        /// The tool calls the model asked for.
        tool_calls: Vec<ToolCall>,
    },
    /// The outcome of one tool call.
    ToolResult {
        /// Id of the [`ToolCall`] this answers.
        call_id: String,
        /// Name of the tool that was called.
        name: String,
        /// The tool's output, or what went wrong.
        content: String,
        /// Whether the call failed. Providers without an error flag only see
        /// `content`, so it should say what went wrong.
        is_error: bool,
    },
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// The provider's model name.
    pub model: String,
    /// System prompt, if any.
    pub system: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call (shared by every step of a run).
    pub tools: Arc<[ToolSpec]>,
    /// Cap on the tokens the model may generate, sent with every request so
    /// that no answer is open-ended.
    pub max_tokens: u32,
}

/// Tokens one model call consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Tokens of the prompt.
    pub input_tokens: u64,
    /// Tokens the model generated.
    pub output_tokens: u64,
}

/// Something the model produced, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// The next piece of the model's text.
    TextDelta(String),
    /// A tool call, emitted once all of it has arrived.
    ToolCall(ToolCall),
    /// Token usage of the call, when the provider reports it.
    Usage(TokenUsage),
    /// The model has finished; always the last event of a successful stream.
    Finished {
        /// Why the model stopped.
        reason: FinishReason,
    },
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The model wants its tool calls run.
    ToolCalls,
    /// The token limit cut the answer short.
    Length,
    /// Any other reason, as the provider named it.
    Other(String),
}

/// Why a model call failed. Messages never contain credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The provider answered with an error status.
    #[error("model provider answered http {status}: {body}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The provider did not start answering in time.
    #[error("model provider did not answer in time")]
    Timeout,
    /// The connection could not be made, or broke.
    #[error("model provider connection failed: {0}")]
    Connect(String),
    /// The provider's answer did not follow its API.
    #[error("model provider sent a malformed answer: {0}")]
    Protocol(String),
    /// The answer passed one of the limits of a model call.
    #[error("{0}")]
    Limit(StreamLimit),
    /// The provider asked to slow down (HTTP 429).
    #[error("model provider is rate limiting{}", retry_after.map(|after| format!(" (retry after {}s)", after.as_secs())).unwrap_or_default())]
    RateLimited {
        /// How long the provider asked to wait, if it said.
        retry_after: Option<Duration>,
    },
}

/// A limit of one model call, named in the error that ends the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLimit {
    /// Nothing arrived for this long once the answer had started.
    Idle(Duration),
    /// The whole call took longer than this.
    CallTime(Duration),
    /// The answer's text and tool-call arguments passed this many bytes.
    ResponseBytes(usize),
    /// One server-sent event passed this many bytes.
    EventBytes(usize),
}

impl std::fmt::Display for StreamLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Idle(after) => write!(
                f,
                "the model sent nothing for {} (the model stream idle timeout)",
                humantime::format_duration(*after)
            ),
            Self::CallTime(limit) => write!(
                f,
                "the model call took longer than {} (the model call time limit)",
                humantime::format_duration(*limit)
            ),
            Self::ResponseBytes(limit) => write!(
                f,
                "the model's answer is larger than {limit} bytes (the model response size limit)"
            ),
            Self::EventBytes(limit) => write!(
                f,
                "the model sent a stream event larger than {limit} bytes (the model stream event size limit)"
            ),
        }
    }
}
