//! The messages of a thread.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{MessageId, RunId, ThreadId};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
    /// Tool results.
    Tool,
}

impl Role {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    /// From the stored name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call by the model; `arguments` is the raw JSON text it produced.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name as the model saw it.
        name: String,
        /// Raw JSON arguments.
        arguments: String,
    },
    /// The result given back to the model.
    ToolResult {
        /// The call it answers.
        tool_call_id: String,
        /// Tool name as the model saw it.
        name: String,
        /// Text for the model.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// A message of a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Id.
    pub id: MessageId,
    /// Thread.
    pub thread_id: ThreadId,
    /// Run that produced it, if any.
    pub run_id: Option<RunId>,
    /// Position in the thread.
    pub seq: i64,
    /// Author.
    pub role: Role,
    /// Parts.
    pub parts: Vec<Part>,
    /// Created, Unix ms.
    pub created_at: i64,
}

impl Part {
    /// Bytes of the part's text fields: what it adds to a model request,
    /// give or take the encoding.
    pub fn size(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::ToolCall {
                id,
                name,
                arguments,
            } => id.len() + name.len() + arguments.len(),
            Self::ToolResult {
                tool_call_id,
                name,
                content,
                ..
            } => tool_call_id.len() + name.len() + content.len(),
        }
    }
}

impl Message {
    /// Bytes of the message's parts; see [`Part::size`].
    pub fn size(&self) -> usize {
        self.parts.iter().map(Part::size).sum()
    }
}
