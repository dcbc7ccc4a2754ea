//! The approvals of the fake mcp-service: a gated tool asks for one, an
//! approver (a caller with the `approver` role) decides it, and a call that
//! presents it runs once when it was approved.

use std::{collections::HashMap, sync::Mutex};

use crate::domain::{
    entities::ApprovalAsked,
    ports::{ApprovalUnusable, Caller, DecideError, McpCallError, ToolFailure, ToolOutput},
};

/// The role that decides the fake's approvals.
pub const APPROVER_ROLE: &str = "approver";

/// Where one approval stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeApprovalState {
    /// Waiting.
    Pending,
    /// Approved, not used.
    Approved,
    /// Denied, with the approver's words.
    Denied(String),
    /// Approved and used.
    Used,
}

/// The fake's approvals by id.
#[derive(Debug, Default)]
pub struct FakeApprovals {
    states: Mutex<HashMap<String, FakeApprovalState>>,
}

impl FakeApprovals {
    /// What a gated call answers: a new approval, or what the presented
    /// one says. `Ok(None)` means the call runs.
    pub fn gate(
        &self,
        tool: &str,
        presented: Option<&str>,
    ) -> Result<Option<ToolOutput>, McpCallError> {
        let Ok(mut states) = self.states.lock() else {
            return Err(McpCallError::Failed("the fake's lock is poisoned".into()));
        };
        let Some(id) = presented else {
            let id = format!("approval-{}", states.len() + 1);
            states.insert(id.clone(), FakeApprovalState::Pending);
            return Ok(Some(required(tool, id)));
        };
        match states.get(id).cloned() {
            None => Err(McpCallError::NotFound(format!("no approval {id}"))),
            Some(FakeApprovalState::Pending) => Err(McpCallError::ApprovalPending),
            Some(FakeApprovalState::Approved) => {
                states.insert(id.to_owned(), FakeApprovalState::Used);
                Ok(None)
            }
            Some(FakeApprovalState::Denied(comment)) => Ok(Some(ToolOutput {
                failure: Some(ToolFailure::ApprovalDenied),
                error_message: format!("the fake's description of the denial of {id}"),
                approval: Some(asked(id.to_owned())),
                denial_comment: Some(comment),
                ..ToolOutput::default()
            })),
            Some(FakeApprovalState::Used) => Err(McpCallError::ApprovalUnusable {
                why: ApprovalUnusable::Used,
                message: format!("approval {id} was used"),
            }),
        }
    }

    /// Decides `id` as `caller`.
    pub fn decide(
        &self,
        caller: &Caller,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<(), DecideError> {
        if !caller.principal.has_role(APPROVER_ROLE) {
            return Err(DecideError::NotAllowed(
                "deciding this approval needs the approver role its rule names".into(),
            ));
        }
        self.set(id, approve, comment)
    }

    /// Decides `id` as an approver elsewhere would.
    pub fn set(&self, id: &str, approve: bool, comment: &str) -> Result<(), DecideError> {
        let Ok(mut states) = self.states.lock() else {
            return Err(DecideError::Invalid("the fake's lock is poisoned".into()));
        };
        match states.get(id) {
            None => Err(DecideError::NotFound(format!("no approval {id}"))),
            Some(FakeApprovalState::Pending) => {
                let state = if approve {
                    FakeApprovalState::Approved
                } else {
                    FakeApprovalState::Denied(comment.to_owned())
                };
                states.insert(id.to_owned(), state);
                Ok(())
            }
            Some(_) => Err(DecideError::Settled),
        }
    }

    /// Where `id` stands.
    pub fn state(&self, id: &str) -> Option<FakeApprovalState> {
        self.states.lock().ok()?.get(id).cloned()
    }
}

fn asked(id: String) -> ApprovalAsked {
    ApprovalAsked {
        id,
        rule: "tools@1/destructive".into(),
        reason: "destructive tools need an approver".into(),
        approver_role: APPROVER_ROLE.into(),
        requester_may_approve: false,
        expires_at: 4_102_444_800_000,
    }
}

fn required(tool: &str, id: String) -> ToolOutput {
    ToolOutput {
        failure: Some(ToolFailure::ApprovalRequired),
        error_message: format!("the call of `{tool}` needs an approval"),
        approval: Some(asked(id)),
        ..ToolOutput::default()
    }
}
