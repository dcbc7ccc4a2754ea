//! The settings of approval gates: how long an approver has to decide, how
//! long an approved call may wait to run, and how many approvals may wait
//! per organization.

use std::time::Duration;

use crate::domain::approvals::ApprovalLimits;

/// Approval gates: expiry and bounds.
#[derive(Debug, Clone, clap::Args)]
pub struct ApprovalArgs {
    /// How long an approval waits for an approver before it expires.
    #[arg(long = "approval-decide-within", env = "SWITCHBOARD_APPROVAL_DECIDE_WITHIN", default_value = "24h", value_parser = humantime::parse_duration)]
    pub decide_within: Duration,
    /// How long an approved call may wait to be made before the approval
    /// expires.
    #[arg(long = "approval-use-within", env = "SWITCHBOARD_APPROVAL_USE_WITHIN", default_value = "1h", value_parser = humantime::parse_duration)]
    pub use_within: Duration,
    /// Most approvals waiting for a decision per organization; a gated call
    /// past it is RESOURCE_EXHAUSTED.
    #[arg(long = "approval-max-pending", env = "SWITCHBOARD_APPROVAL_MAX_PENDING", default_value_t = ApprovalLimits::default().max_pending_per_org)]
    pub max_pending: u32,
}

impl Default for ApprovalArgs {
    fn default() -> Self {
        let limits = ApprovalLimits::default();
        Self {
            decide_within: limits.decide_within,
            use_within: limits.use_within,
            max_pending: limits.max_pending_per_org,
        }
    }
}

impl ApprovalArgs {
    /// The limits of approvals.
    pub fn limits(&self) -> ApprovalLimits {
        ApprovalLimits {
            decide_within: self.decide_within,
            use_within: self.use_within,
            max_pending_per_org: self.max_pending,
            ..ApprovalLimits::default()
        }
    }
}
