//! What a run tells its client as it goes: the events, numbered in order,
//! streamed to the client that started it and stored for `WatchRun`. Here,
//! below the run and the ports, because the run emits them, storage keeps
//! them and `WatchRun` replays them.

use serde::{Deserialize, Serialize};

use super::{
    entities::{
        InputRequest, Message, ModelChoice, PendingApproval, PendingCall, Run, RunStatus, Usage,
    },
    ids::{IntegrationId, RunId},
    model::ToolCall,
    pins::ToolDefinitionChanged,
    recovery::Continuation,
    usage::SoftBudgetPassed,
};

/// What kind of tool a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolKind {
    /// An MCP tool.
    Mcp,
    /// A client-side tool.
    Client,
    /// A built-in tool.
    Builtin,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolCallStatus {
    /// It succeeded.
    Succeeded,
    /// It reported an error.
    Failed,
    /// It timed out.
    TimedOut,
    /// The model named an unknown tool.
    NotFound,
    /// The server asks the caller before it completes the call; the run
    /// pauses.
    InputRequired,
    /// A policy rule gates the call behind an approval; the run pauses.
    ApprovalRequired,
    /// Its replica stopped before its result was recorded and the run
    /// continued elsewhere: it may have reached its server, and it was not
    /// made again.
    MayHaveRun,
}

/// Something that happened in a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEvent {
    /// The run started.
    Started(Run),
    /// The model produced text.
    TextDelta(String),
    /// A message was stored.
    MessageCreated(Message),
    /// A tool call started.
    ToolCallStarted {
        /// The call.
        call: ToolCall,
        /// What runs it.
        kind: ToolKind,
    },
    /// A tool call finished.
    ToolCallFinished {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// How it ended.
        status: ToolCallStatus,
        /// What the model was told.
        result: String,
    },
    /// An integration was skipped.
    DiscoveryFailed {
        /// Its id.
        integration_id: IntegrationId,
        /// Why.
        error: String,
    },
    /// The run paused for client tool calls.
    ClientToolCallsRequired(Vec<PendingCall>),
    /// The run paused: an MCP tool call waits for the caller's answers.
    ToolInputRequired {
        /// The call id.
        id: String,
        /// The tool name the model used.
        name: String,
        /// What the server asks.
        requests: Vec<InputRequest>,
    },
    /// The run paused: an MCP tool call waits for an approval.
    ToolApprovalRequired {
        /// The call id.
        id: String,
        /// The tool name the model used.
        name: String,
        /// The call's arguments, JSON text.
        arguments: String,
        /// The call and its approval.
        approval: PendingApproval,
    },
    /// The replica running the run stopped and this one continues it.
    Continued {
        /// The run as taken over.
        run: Run,
        /// How the calls in flight were resolved.
        continuation: Continuation,
    },
    /// The run started past its organization's soft monthly token budget.
    SoftBudgetPassed(SoftBudgetPassed),
    /// A tool the thread pinned changed, and what the run did about it.
    ToolDefinitionChanged(ToolDefinitionChanged),
    /// The user must connect an integration (OAuth).
    AuthorizationRequired {
        /// The integration.
        integration_id: IntegrationId,
        /// Where the user's browser goes.
        url: String,
        /// The tool call that needed it.
        tool_call_id: String,
    },
    /// Tokens of one model call and the total.
    Usage {
        /// This call.
        call: Usage,
        /// The run so far.
        total: Usage,
        /// The model that answered (stored events before it name none).
        #[serde(default)]
        model: ModelChoice,
    },
    /// A model failed before any output; the step goes on with the next.
    ModelFallback {
        /// The model that failed.
        failed: ModelChoice,
        /// Why.
        error: String,
        /// The model the step goes on with.
        next: ModelChoice,
    },
    /// The run ended without failing.
    Completed(Run),
    /// The run failed.
    Failed {
        /// The run.
        run: Run,
        /// Why.
        error: String,
    },
}

impl RunEvent {
    /// Whether the event ends the run's stream.
    pub fn is_last(&self) -> bool {
        matches!(self, Self::Completed(_) | Self::Failed { .. })
    }

    /// The event that tells where a run that ended stands.
    pub fn ending(run: Run) -> Self {
        match run.status {
            RunStatus::Failed | RunStatus::Cancelled | RunStatus::Interrupted => {
                let error = run
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("the run ended {}", run.status.as_str()));
                Self::Failed { run, error }
            }
            _ => Self::Completed(run),
        }
    }
}

/// An event with its position in the run's stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    /// The run.
    pub run_id: RunId,
    /// Position, from 1.
    pub sequence: i64,
    /// The event.
    pub event: RunEvent,
}
