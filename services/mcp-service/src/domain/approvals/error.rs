//! What can go wrong in the approval use cases: the gate on a tool call,
//! and an approver's reading and deciding. The service error wraps it from
//! above; `inbound` maps it to a gRPC status (a pending or denied approval
//! is an ExecuteTool response, not a status).

use switchboard_server::FieldViolation;

use super::{Approval, ApprovalState, Mismatch, RedeemRefusal};

/// A failure of an approval use case, or the gate holding a call.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Request fields are invalid.
    #[error("invalid request")]
    Invalid(Vec<FieldViolation>),
    /// The caller lacks a role, or may not decide this approval.
    #[error("{0}")]
    Forbidden(&'static str),
    /// A gated call without an approval: a new pending approval was made
    /// for it; the tool has not run.
    #[error("the call needs an approval: {}", .0.gate.reason)]
    Pending(Box<Approval>),
    /// The presented approval was denied; the tool has not run.
    #[error("the call was not approved")]
    Denied(Box<Approval>),
    /// The presented approval does not fit the call, or cannot be used.
    #[error("{}", refusal_text(.0))]
    Refused(RedeemRefusal),
    /// The approval is no longer pending.
    #[error("the approval is {} already", .0.as_str())]
    Decided(ApprovalState),
    /// No such approval the caller may see.
    #[error("approval not found")]
    NotFound,
    /// The organization has as many approvals waiting as it may.
    #[error("{0}")]
    LimitReached(String),
    /// Anything unexpected (storage).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<FieldViolation> for ApprovalError {
    fn from(violation: FieldViolation) -> Self {
        Self::Invalid(vec![violation])
    }
}

/// What the caller reads of an approval that cannot be used: the class of
/// the problem only.
fn refusal_text(refusal: &RedeemRefusal) -> &'static str {
    match refusal {
        RedeemRefusal::NotFound => "approval not found",
        RedeemRefusal::Mismatch(Mismatch::Requester) => "the approval was not given to this caller",
        RedeemRefusal::Mismatch(Mismatch::Integration) => {
            "the approval was given for another integration"
        }
        RedeemRefusal::Mismatch(Mismatch::Tool) => "the approval was given for another tool",
        RedeemRefusal::Mismatch(Mismatch::Arguments) => {
            "the approval was given for other arguments"
        }
        RedeemRefusal::Pending => "the approval is still waiting for an approver",
        RedeemRefusal::AlreadyUsed => "the approval was used already: its call ran once",
        RedeemRefusal::Expired => "the approval expired",
        RedeemRefusal::Denied { .. } => "the call was not approved",
    }
}
