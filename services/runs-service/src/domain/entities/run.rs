//! Runs: their state, the tool names they offered and what they used.

use serde::{Deserialize, Serialize};

use super::PendingCall;
use crate::domain::ids::{AgentId, IntegrationId, RunId, ThreadId};

/// The state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// In progress.
    Running,
    /// Answered without tool calls.
    Completed,
    /// Paused for client tool results.
    RequiresAction,
    /// Stopped at the step limit.
    MaxSteps,
    /// Failed.
    Failed,
    /// Cancelled by the client.
    Cancelled,
    /// Its process stopped.
    Interrupted,
}

impl RunStatus {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::RequiresAction => "requires_action",
            Self::MaxSteps => "max_steps",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
        }
    }

    /// From the stored name.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "running" => Self::Running,
            "completed" => Self::Completed,
            "requires_action" => Self::RequiresAction,
            "max_steps" => Self::MaxSteps,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            "interrupted" => Self::Interrupted,
            _ => return None,
        })
    }
}

/// What runs a model-facing tool name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolTarget {
    /// A tool of an MCP integration.
    Mcp {
        /// The integration.
        integration_id: IntegrationId,
        /// The server's own tool name.
        server_tool_name: String,
    },
    /// A tool the caller executes.
    Client,
    /// A tool built into runs-service.
    Builtin,
}

/// A model-facing tool name and what runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolBinding {
    /// Name the model sees.
    pub name: String,
    /// What runs it.
    pub target: ToolTarget,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Generated tokens.
    pub output_tokens: i64,
}

/// One execution of an agent on a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Id.
    pub id: RunId,
    /// Thread.
    pub thread_id: ThreadId,
    /// Agent.
    pub agent_id: AgentId,
    /// State.
    pub status: RunStatus,
    /// Model calls made.
    pub steps: i64,
    /// Tokens used.
    pub usage: Usage,
    /// Why it failed.
    pub error: Option<String>,
    /// The tool-name map.
    pub bindings: Vec<ToolBinding>,
    /// Calls it waits for, when paused.
    pub pending: Vec<PendingCall>,
    /// Created, Unix ms.
    pub created_at: i64,
    /// Updated, Unix ms.
    pub updated_at: i64,
}

impl Run {
    /// A new run of `agent_id` on `thread_id`, running from `at` (Unix ms)
    /// with nothing done yet.
    pub fn started(thread_id: ThreadId, agent_id: AgentId, at: i64) -> Self {
        Self {
            id: RunId::new(),
            thread_id,
            agent_id,
            status: RunStatus::Running,
            steps: 0,
            usage: Usage::default(),
            error: None,
            bindings: Vec::new(),
            pending: Vec::new(),
            created_at: at,
            updated_at: at,
        }
    }
}
