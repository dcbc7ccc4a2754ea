//! What a paused run waits for: client tool calls, servers' questions and
//! approvals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::ids::IntegrationId;

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
