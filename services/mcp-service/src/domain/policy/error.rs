//! What can go wrong in the policy use cases: writing and reading policies,
//! and deciding a call. The service error wraps it from above; `inbound`
//! maps it to a gRPC status.

use switchboard_server::FieldViolation;

use crate::domain::{gate::Gate, guardrails::Detector};

/// A failure of a policy use case, or the decision that refuses a call.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Fields of a policy being written are invalid.
    #[error("invalid request")]
    Invalid(Vec<FieldViolation>),
    /// The caller lacks a role.
    #[error("{0}")]
    Forbidden(&'static str),
    /// A policy rule refuses the call.
    #[error("denied by policy rule {rule}: {reason}")]
    Denied {
        /// The deciding rule, `policy@version/rule`.
        rule: String,
        /// The rule's reason.
        reason: String,
    },
    /// A policy rule gates the call behind an approval, and the call
    /// carries none.
    #[error("the call needs an approval: {}", .0.reason)]
    ApprovalRequired(Box<Gate>),
    /// The tool is not on the calling agent's allow-list.
    #[error("the agent may not call tool `{0}`: it is not on the agent's tool list")]
    OutsideAllowList(String),
    /// No such policy in the caller's organization.
    #[error("policy not found")]
    NotFound,
    /// A policy write conflicts with the stored versions.
    #[error(transparent)]
    Conflict(PolicyStoreError),
    /// The organization has as many policies as it may.
    #[error("{0}")]
    LimitReached(String),
    /// Anything unexpected (storage, a stored policy that does not compile).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Why a policy write or read failed, as the [`PolicyRepository`] says.
///
/// [`PolicyRepository`]: super::ports::PolicyRepository
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

impl From<FieldViolation> for PolicyError {
    fn from(violation: FieldViolation) -> Self {
        Self::Invalid(vec![violation])
    }
}

impl From<PolicyStoreError> for PolicyError {
    fn from(error: PolicyStoreError) -> Self {
        match error {
            PolicyStoreError::NotFound => Self::NotFound,
            PolicyStoreError::Other(error) => Self::Internal(error),
            error => Self::Conflict(error),
        }
    }
}

impl PolicyError {
    /// The refusal of a call whose arguments carry what `detector` finds
    /// and the guardrails block: denied as by a rule `guardrails/{detector}`,
    /// so the audit trail, the gRPC status and a model's text say so as
    /// for any denied call.
    pub fn arguments_carry(detector: Detector) -> Self {
        Self::Denied {
            rule: format!("guardrails/{}", detector.name()),
            reason: format!(
                "the call's arguments carry a {}, so it was not sent",
                detector.described()
            ),
        }
    }

    /// The refusal of a resource read or a prompt (`what`) whose text
    /// carries what `detector` finds and the guardrails block.
    pub fn withheld(detector: Detector, what: &str) -> Self {
        Self::Denied {
            rule: format!("guardrails/{}", detector.name()),
            reason: format!(
                "the {what} carries a {}, so it was withheld",
                detector.described()
            ),
        }
    }
}
