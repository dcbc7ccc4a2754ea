//! What can go wrong in mcp-service's use cases.

use switchboard_server::FieldViolation;

use super::integration::IntegrationId;

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
    Upstream(#[from] super::ports::CallError),
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
    /// A policy rule gates the call behind an approval, and the call
    /// carries none.
    #[error("the call needs an approval: {}", .0.reason)]
    ApprovalRequired(Box<super::gate::Gate>),
    /// A gated call without an approval: a new pending approval was made
    /// for it; the tool has not run.
    #[error("the call needs an approval: {}", .0.gate.reason)]
    ApprovalPending(Box<super::approval::Approval>),
    /// The presented approval was denied; the tool has not run.
    #[error("the call was not approved")]
    ApprovalDenied(Box<super::approval::Approval>),
    /// The presented approval does not fit the call, or cannot be used.
    #[error("{}", approval_refusal(.0))]
    ApprovalRefused(super::approval::RedeemRefusal),
    /// The approval is no longer pending.
    #[error("the approval is {} already", .0.as_str())]
    ApprovalDecided(super::approval::ApprovalState),
    /// No such approval the caller may see.
    #[error("approval not found")]
    ApprovalNotFound,
    /// A policy rule refuses the call.
    #[error("denied by policy rule {rule}: {reason}")]
    PolicyDenied {
        /// The deciding rule, `policy@version/rule`.
        rule: String,
        /// The rule's reason.
        reason: String,
    },
    /// The tool is not on the calling agent's allow-list.
    #[error("the agent may not call tool `{0}`: it is not on the agent's tool list")]
    OutsideAllowList(String),
    /// No such policy in the caller's organization.
    #[error("policy not found")]
    PolicyNotFound,
    /// A policy write conflicts with the stored versions.
    #[error(transparent)]
    PolicyStore(PolicyStoreError),
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

/// Why a policy write or read failed.
#[derive(Debug, thiserror::Error)]
pub enum PolicyStoreError {
    /// A policy of that name exists (a create with `expected_version` 0).
    #[error("policy `{0}` already exists; pass its current version to replace it")]
    Exists(String),
    /// The expected version is not the current one any more.
    #[error("policy `{name}` is at version {current}, not {expected}")]
    Stale {
        /// The policy.
        name: String,
        /// The version the writer expected.
        expected: i64,
        /// The current version.
        current: i64,
    },
    /// No such policy (or it is deleted).
    #[error("policy not found")]
    NotFound,
    /// Anything else.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// What the caller reads of an approval that cannot be used: the class of
/// the problem only.
fn approval_refusal(refusal: &super::approval::RedeemRefusal) -> String {
    use super::approval::{Mismatch, RedeemRefusal};
    match refusal {
        RedeemRefusal::NotFound => "approval not found".to_owned(),
        RedeemRefusal::Mismatch(Mismatch::Requester) => {
            "the approval was not given to this caller".to_owned()
        }
        RedeemRefusal::Mismatch(Mismatch::Integration) => {
            "the approval was given for another integration".to_owned()
        }
        RedeemRefusal::Mismatch(Mismatch::Tool) => {
            "the approval was given for another tool".to_owned()
        }
        RedeemRefusal::Mismatch(Mismatch::Arguments) => {
            "the approval was given for other arguments".to_owned()
        }
        RedeemRefusal::Pending => "the approval is still waiting for an approver".to_owned(),
        RedeemRefusal::AlreadyUsed => "the approval was used already: its call ran once".to_owned(),
        RedeemRefusal::Expired => "the approval expired".to_owned(),
        RedeemRefusal::Denied { .. } => "the call was not approved".to_owned(),
    }
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

impl From<PolicyStoreError> for McpError {
    fn from(error: PolicyStoreError) -> Self {
        match error {
            PolicyStoreError::NotFound => Self::PolicyNotFound,
            PolicyStoreError::Other(error) => Self::Internal(error),
            error => Self::PolicyStore(error),
        }
    }
}
