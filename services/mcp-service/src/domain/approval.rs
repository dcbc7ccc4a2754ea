//! An approval of a gated call: what it is bound to, where it stands and
//! why it cannot be redeemed; the values [`super::approvals`] keeps and
//! reports, and the decorators that record calls read.

use std::time::Duration;

use super::gate::Gate;

/// Longest approval id accepted (a UUID is 36 bytes).
pub const MAX_ID_BYTES: usize = 64;

/// Where an approval stands (the states of `approvals.proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalState {
    /// Waiting for an approver.
    Pending,
    /// Approved; the call may run once.
    Approved,
    /// Denied.
    Denied,
    /// Approved and used: the call ran.
    Used,
    /// Not decided, or not used, in time.
    Expired,
}

impl ApprovalState {
    /// The stored spelling, stable across releases.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Used => "used",
            Self::Expired => "expired",
        }
    }

    /// The state a stored spelling names; `None` for anything else.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "approved" => Some(Self::Approved),
            "denied" => Some(Self::Denied),
            "used" => Some(Self::Used),
            "expired" => Some(Self::Expired),
            _ => None,
        }
    }
}

/// What an approval is bound to: who asked, in which organization, for which
/// integration, tool and exact arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The organization.
    pub org_id: String,
    /// The requester's user id.
    pub requester: String,
    /// The integration id.
    pub integration_id: String,
    /// The tool's own name.
    pub tool_name: String,
    /// SHA-256 hex of the canonical JSON of the arguments.
    pub arguments_digest: String,
}

/// A gated call and where its approval stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Its id (a UUID).
    pub id: String,
    /// Who asked, for what.
    pub binding: Binding,
    /// The exact arguments, JSON text.
    pub arguments_json: String,
    /// The rule that gated the call, its reason and approver.
    pub gate: Gate,
    /// The stored state; [`Approval::state_at`] tells expiry apart.
    pub state: ApprovalState,
    /// Who decided.
    pub decided_by: Option<String>,
    /// The approver's words.
    pub comment: String,
    /// When it was asked for, in milliseconds since the epoch.
    pub created_at: i64,
    /// When it was decided.
    pub decided_at: Option<i64>,
    /// When it expires: undecided, or approved and unused, after this time.
    pub expires_at: i64,
}

impl Approval {
    /// Where it stands at `now_ms`: a pending or approved approval past its
    /// time is expired, whatever is stored.
    #[must_use]
    pub fn state_at(&self, now_ms: i64) -> ApprovalState {
        match self.state {
            ApprovalState::Pending | ApprovalState::Approved if now_ms >= self.expires_at => {
                ApprovalState::Expired
            }
            state => state,
        }
    }
}

/// Why a presented approval does not fit the call: the class of mismatch
/// only, so another user learns nothing of the approval's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// Asked for by another user.
    Requester,
    /// For another integration.
    Integration,
    /// For another tool.
    Tool,
    /// For other arguments.
    Arguments,
}

impl Mismatch {
    /// The ErrorInfo reason for this mismatch.
    #[must_use]
    pub fn reason(self) -> &'static str {
        match self {
            Self::Requester => "APPROVAL_OTHER_REQUESTER",
            Self::Integration => "APPROVAL_OTHER_INTEGRATION",
            Self::Tool => "APPROVAL_OTHER_TOOL",
            Self::Arguments => "APPROVAL_OTHER_ARGUMENTS",
        }
    }
}

/// Why an approval cannot be redeemed for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedeemRefusal {
    /// Another organization's id, or no such id (NOT_FOUND).
    NotFound,
    /// Bound to something else (PERMISSION_DENIED).
    Mismatch(Mismatch),
    /// Still waiting for an approver (FAILED_PRECONDITION).
    Pending,
    /// Already used: the call ran once (FAILED_PRECONDITION).
    AlreadyUsed,
    /// Not decided, or not used, in time (FAILED_PRECONDITION).
    Expired,
    /// Denied, with the approver's comment (the ExecuteTool response says
    /// APPROVAL_DENIED).
    Denied {
        /// The approver's words.
        comment: String,
    },
}

/// Which of a binding's parts differ from the call's, the requester first so
/// another user never learns more than "not yours"; `None` when all fit.
#[must_use]
pub fn mismatch(approval: &Binding, call: &Binding) -> Option<Mismatch> {
    if approval.requester != call.requester {
        Some(Mismatch::Requester)
    } else if approval.integration_id != call.integration_id {
        Some(Mismatch::Integration)
    } else if approval.tool_name != call.tool_name {
        Some(Mismatch::Tool)
    } else if approval.arguments_digest != call.arguments_digest {
        Some(Mismatch::Arguments)
    } else {
        None
    }
}

/// Why an approval in `state` (and expiring at `expires_at_ms`) cannot be
/// redeemed for `call` at `now_ms`; `None` when it can. The storage's
/// conditional update is what makes the redemption atomic; this explains a
/// refused one.
#[must_use]
pub fn refusal(
    approval: &Binding,
    state: ApprovalState,
    comment: &str,
    expires_at_ms: i64,
    call: &Binding,
    now_ms: i64,
) -> Option<RedeemRefusal> {
    if approval.org_id != call.org_id {
        return Some(RedeemRefusal::NotFound);
    }
    if let Some(class) = mismatch(approval, call) {
        return Some(RedeemRefusal::Mismatch(class));
    }
    match state {
        ApprovalState::Used => Some(RedeemRefusal::AlreadyUsed),
        ApprovalState::Denied => Some(RedeemRefusal::Denied {
            comment: comment.to_owned(),
        }),
        ApprovalState::Expired => Some(RedeemRefusal::Expired),
        _ if now_ms >= expires_at_ms => Some(RedeemRefusal::Expired),
        ApprovalState::Pending => Some(RedeemRefusal::Pending),
        ApprovalState::Approved => None,
    }
}

/// How long approvals live and how many may wait per organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalLimits {
    /// Time an approver has to decide.
    pub decide_within: Duration,
    /// Time the requester has to use an approval once approved.
    pub use_within: Duration,
    /// Pending approvals per organization; more are refused
    /// (RESOURCE_EXHAUSTED).
    pub max_pending_per_org: u32,
    /// Longest comment, in bytes.
    pub max_comment_bytes: usize,
}

impl Default for ApprovalLimits {
    fn default() -> Self {
        Self {
            decide_within: Duration::from_secs(24 * 60 * 60),
            use_within: Duration::from_secs(60 * 60),
            max_pending_per_org: 1000,
            max_comment_bytes: 1024,
        }
    }
}
