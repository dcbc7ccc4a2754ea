//! What can go wrong in mcp-service's use cases: the service error, which
//! wraps from above the errors the policy, approval and audit modules own
//! (none of them names it), and how each failure ends in the audit trail.

use switchboard_server::FieldViolation;

use super::{
    approvals::ApprovalError,
    audit::{AuditError, AuditOutcome},
    integration::IntegrationId,
    policy::PolicyError,
    ports::CallError,
};

/// A use-case failure. `inbound` maps it to a gRPC status in one place.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// Request fields are invalid.
    #[error("invalid request")]
    Invalid(Vec<FieldViolation>),
    /// No such integration in the caller's organization.
    #[error("integration not found")]
    NotFound,
    /// The slug is taken in the organization.
    #[error("an integration with slug `{0}` already exists in this organization")]
    SlugTaken(String),
    /// The caller lacks a role.
    #[error("{0}")]
    Forbidden(&'static str),
    /// The integration is disabled.
    #[error("integration {0} is disabled")]
    Disabled(IntegrationId),
    /// The MCP server could not answer.
    #[error(transparent)]
    Upstream(#[from] CallError),
    /// The caller must authorize the integration's server first.
    #[error("connect your account to the integration first, at its authorization URL")]
    AuthorizationRequired {
        /// Where to send the user's browser.
        authorization_url: String,
    },
    /// The integration's organization-wide connection is not made yet, and
    /// only an admin can make it.
    #[error(
        "an admin of the organization must connect this integration first (StartAuthorization)"
    )]
    OrganizationConnectionRequired,
    /// An authorization could not be started or completed.
    #[error(transparent)]
    Authorization(super::ports::AuthorizationError),
    /// A policy use case failed, or a policy refuses the call.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// An approval use case failed, or the approval gate holds the call.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// Reading the audit trail failed.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// No such toolset in the caller's organization.
    #[error("toolset not found")]
    ToolsetNotFound,
    /// The toolset name is taken in the organization.
    #[error("a toolset named `{0}` already exists in this organization")]
    ToolsetExists(String),
    /// An organization-wide count limit is reached.
    #[error("{0}")]
    LimitReached(String),
    /// Anything unexpected (storage, crypto).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl McpError {
    /// An invalid-request error about one field.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self::Invalid(vec![FieldViolation::new(field, description)])
    }
}

impl From<FieldViolation> for McpError {
    fn from(violation: FieldViolation) -> Self {
        Self::Invalid(vec![violation])
    }
}

/// How a use case's refusal ends in the trail: its outcome, reason and rule.
pub fn refusal(error: &McpError) -> (AuditOutcome, String, String) {
    let denied = || (AuditOutcome::Denied, error.to_string(), String::new());
    match error {
        McpError::Policy(PolicyError::ApprovalRequired(gate)) => (
            AuditOutcome::PendingApproval,
            gate.reason.clone(),
            gate.rule.clone(),
        ),
        McpError::Approval(ApprovalError::Pending(approval)) => (
            AuditOutcome::PendingApproval,
            approval.gate.reason.clone(),
            approval.gate.rule.clone(),
        ),
        McpError::Approval(ApprovalError::Denied(approval)) => (
            AuditOutcome::Denied,
            error.to_string(),
            approval.gate.rule.clone(),
        ),
        McpError::Policy(PolicyError::Denied { rule, reason }) => {
            (AuditOutcome::Denied, reason.clone(), rule.clone())
        }
        McpError::Policy(PolicyError::Internal(_))
        | McpError::Approval(ApprovalError::Internal(_))
        | McpError::Audit(AuditError::Internal(_)) => failed(error),
        McpError::Upstream(CallError::Exhausted { .. })
        | McpError::Invalid(_)
        | McpError::NotFound
        | McpError::SlugTaken(_)
        | McpError::Forbidden(_)
        | McpError::Disabled(_)
        | McpError::AuthorizationRequired { .. }
        | McpError::OrganizationConnectionRequired
        | McpError::Policy(_)
        | McpError::Approval(_)
        | McpError::Audit(_)
        | McpError::ToolsetNotFound
        | McpError::ToolsetExists(_)
        | McpError::LimitReached(_) => denied(),
        McpError::Upstream(_) | McpError::Authorization(_) | McpError::Internal(_) => failed(error),
    }
}

/// A refusal that is a failure of the service or the server, not a denial.
fn failed(error: &McpError) -> (AuditOutcome, String, String) {
    (AuditOutcome::Failed, error.to_string(), String::new())
}
