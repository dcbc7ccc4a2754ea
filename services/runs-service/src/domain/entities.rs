//! Agents, threads, messages and runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{
    ids::{AgentId, IntegrationId, MessageId, RunId, ThreadId},
    pins::ToolDriftPolicy,
    recovery::RunRecovery,
};

/// A new time-ordered id.
pub fn new_id() -> String {
    Uuid::now_v7().hyphenated().to_string()
}

/// A tool the calling application executes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTool {
    /// Name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// An agent's settings (stored as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AgentConfig {
    /// System instructions.
    pub instructions: String,
    /// Provider name from the service configuration.
    pub provider: String,
    /// The provider's model id.
    pub model: String,
    /// Integrations whose capabilities the agent uses, in order.
    pub mcp_integration_ids: Vec<IntegrationId>,
    /// Per-integration allow-lists of server tool names.
    #[serde(default, deserialize_with = "stored_tool_filters")]
    pub tool_filters: BTreeMap<IntegrationId, Vec<String>>,
    /// Tools executed by the caller.
    #[serde(default)]
    pub client_tools: Vec<ClientTool>,
    /// Model calls per run; 0 means the service default.
    #[serde(default)]
    pub max_steps: u32,
    /// Hide the synthetic resource tools.
    #[serde(default)]
    pub disable_resource_tools: bool,
    /// What a run does with a tool whose definition changed since the
    /// thread pinned it; agents stored before it have the service default.
    #[serde(default)]
    pub tool_drift: ToolDriftPolicy,
    /// What a run does when its replica stops; agents stored before it
    /// have the service default (interrupt).
    #[serde(default)]
    pub recovery: RunRecovery,
    /// Tools (as the model names them) made again when a continued run
    /// finds their call without a recorded result.
    #[serde(default)]
    pub idempotent_tools: Vec<String>,
}

/// Reads stored allow-lists, leaving out those keyed by something that is
/// not a UUID: agents stored before filters were checked may hold one, and
/// it never applied (every integration id is a UUID), so the agent reads as
/// it behaved.
fn stored_tool_filters<'de, D>(
    deserializer: D,
) -> Result<BTreeMap<IntegrationId, Vec<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let stored = BTreeMap::<String, Vec<String>>::deserialize(deserializer)?;
    Ok(stored
        .into_iter()
        .filter_map(|(id, tools)| Some((id.parse().ok()?, tools)))
        .collect())
}

/// An agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// Id.
    pub id: AgentId,
    /// Owning organization.
    pub org_id: String,
    /// Name.
    pub name: String,
    /// Settings.
    pub config: AgentConfig,
    /// Created, Unix ms.
    pub created_at: i64,
    /// Updated, Unix ms.
    pub updated_at: i64,
}

/// A conversation of a user with an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    /// Id.
    pub id: ThreadId,
    /// Owning organization.
    pub org_id: String,
    /// Owning user.
    pub user_id: String,
    /// The agent.
    pub agent_id: AgentId,
    /// Title.
    pub title: String,
    /// Created, Unix ms.
    pub created_at: i64,
    /// Updated, Unix ms.
    pub updated_at: i64,
}

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

/// A tool call a paused run waits for: a client tool's, an MCP tool's whose
/// server asked the caller something ([`PendingCall::input`]), or an MCP
/// tool's that a policy rule gates behind an approval
/// ([`PendingCall::approval`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Raw JSON arguments.
    pub arguments: String,
    /// Set for an MCP tool call that waits for the caller's answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<PendingInput>,
    /// Set for an MCP tool call that waits for an approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<PendingApproval>,
}

impl PendingCall {
    /// Whether the run's caller runs this call (a client tool): neither a
    /// server's question nor an approval holds it.
    pub fn is_client(&self) -> bool {
        self.input.is_none() && self.approval.is_none()
    }
}

/// What an MCP tool call waits for, and what making it again takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingInput {
    /// The integration whose server asked.
    pub integration_id: IntegrationId,
    /// The server's own tool name.
    pub tool: String,
    /// What the server asked.
    pub asked: InputRequired,
}

/// What an MCP tool call gated by an approval waits for, and what making
/// it again takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The integration.
    pub integration_id: IntegrationId,
    /// The server's own tool name.
    pub tool: String,
    /// The approval mcp-service asked for.
    pub asked: ApprovalAsked,
}

/// An approval mcp-service holds a tool call for (its `Approval`, as much
/// of it as the run's caller needs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalAsked {
    /// Its id.
    pub id: String,
    /// The rule that gated the call, `policy@version/rule`.
    pub rule: String,
    /// The rule's reason.
    pub reason: String,
    /// The role an approver must hold.
    pub approver_role: String,
    /// Whether the requester may decide it.
    pub requester_may_approve: bool,
    /// When it expires undecided, in Unix milliseconds.
    pub expires_at: i64,
}

/// A server's questions before it completes a call (an MCP
/// `InputRequiredResult`, as mcp-service passes it on).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRequired {
    /// The questions, in the server's key order.
    pub requests: Vec<InputRequest>,
    /// The server's opaque state, sent back unchanged with the answers.
    pub request_state: Option<String>,
    /// The task that asks, when the server runs the call as a task: the
    /// answers go to it (and the tool is not started again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// One question of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The server's key; the answer goes under it.
    pub key: String,
    /// The MCP method (`elicitation/create`, ...).
    pub method: String,
    /// Its `params` as JSON text.
    pub params_json: String,
}

/// The caller's answers to a server's questions, with the server's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputAnswers {
    /// JSON text of each answer, by the question's key.
    pub responses: BTreeMap<String, String>,
    /// The state the server gave with its questions.
    pub request_state: Option<String>,
    /// The task that asked, when a task did.
    pub task_id: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_tool_filters_keyed_by_no_integration_id_are_left_out() {
        let stored = r#"{"instructions": "", "provider": "p", "model": "m",
            "mcp_integration_ids": ["0192F0C4-7A3B-7C3D-8E4F-0123456789AB"],
            "tool_filters": {"github": ["search"], "0192F0C4-7A3B-7C3D-8E4F-0123456789AB": ["push"]}}"#;
        let config: AgentConfig = serde_json::from_str(stored).expect("readable");
        let id: IntegrationId = "0192f0c4-7a3b-7c3d-8e4f-0123456789ab"
            .parse()
            .expect("a UUID");
        assert_eq!(config.mcp_integration_ids, [id]);
        assert_eq!(
            config.tool_filters,
            BTreeMap::from([(id, vec!["push".to_owned()])])
        );
        let written = serde_json::to_value(&config).expect("writable");
        assert_eq!(
            written["tool_filters"],
            serde_json::json!({"0192f0c4-7a3b-7c3d-8e4f-0123456789ab": ["push"]})
        );
        let junk = r#"{"instructions": "", "provider": "p", "model": "m", "mcp_integration_ids": ["github"]}"#;
        assert!(
            serde_json::from_str::<AgentConfig>(junk).is_err(),
            "an agent's integrations were always checked to be UUIDs"
        );
    }
}
