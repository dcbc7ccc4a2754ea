//! Where approvals are kept.

use async_trait::async_trait;

use super::{Approval, ApprovalState, Binding};

/// An approver's decision, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// True approves, false denies.
    pub approve: bool,
    /// The approver's user id.
    pub decided_by: String,
    /// The approver's words.
    pub comment: String,
    /// When it was decided, in milliseconds since the epoch.
    pub decided_at: i64,
    /// The approval's new expiry (approved: the time to use it).
    pub expires_at: i64,
}

/// A page of an organization's approvals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalQuery {
    /// The organization.
    pub org_id: String,
    /// Only these requesters' or approver roles' approvals; `None` for all.
    pub visible_to: Option<(String, Vec<String>)>,
    /// Only these states (as [`Approval::state_at`] tells them).
    pub states: Vec<ApprovalState>,
    /// Older than this `(created_at, id)`, newest first.
    pub before: Option<(i64, String)>,
    /// At most this many.
    pub limit: usize,
    /// The time expiry is judged at.
    pub now: i64,
}

/// Durable storage of approvals. Every change of state is one conditional
/// update, so two replicas never both decide, or both use, one approval.
#[async_trait]
pub trait ApprovalRepository: Send + Sync + 'static {
    /// Stores a new pending approval when the organization has fewer than
    /// `max_pending` pending ones at `now`; `false` when it has not.
    async fn create(&self, approval: &Approval, max_pending: u32, now: i64)
    -> anyhow::Result<bool>;
    /// The approval `id` of organization `org_id`.
    async fn get(&self, org_id: &str, id: &str) -> anyhow::Result<Option<Approval>>;
    /// Decides `id` when it is pending and not expired at `decision.decided_at`;
    /// `false` when it was not.
    async fn decide(&self, org_id: &str, id: &str, decision: &Decision) -> anyhow::Result<bool>;
    /// Marks `id` used when it is approved, not expired at `now`, and bound to
    /// exactly `call`; `false` when it was not. The one step that lets a call
    /// run.
    async fn redeem(&self, id: &str, call: &Binding, now: i64) -> anyhow::Result<bool>;
    /// A page of approvals, newest first.
    async fn list(&self, query: &ApprovalQuery) -> anyhow::Result<Vec<Approval>>;
}
