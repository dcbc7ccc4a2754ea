//! The use cases of approvals: the gate on a tool call, and an approver's
//! reading and deciding. Each returns what happened, so a caller can record
//! it (the audit trail).

use std::{sync::Arc, time::Duration};

use serde_json::{Map, Value};
use switchboard_auth::Principal;
use switchboard_server::FieldViolation;

use super::{
    Approval, ApprovalLimits, ApprovalState, Binding, MAX_ID_BYTES, RedeemRefusal,
    arguments_digest,
    error::ApprovalError,
    ports::{ApprovalQuery, ApprovalRepository, Decision},
    refusal,
};
use crate::domain::gate::Gate;
/// Most of a caller's roles an approval listing matches approver roles to.
const MAX_LISTED_ROLES: usize = 64;

/// A tool call as the gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct GatedCall<'a> {
    /// The integration id.
    pub integration_id: &'a str,
    /// The tool's own name.
    pub tool: &'a str,
    /// The exact arguments.
    pub arguments: &'a Map<String, Value>,
}

/// Approvals: created by the gate, decided by approvers, used once.
#[derive(Clone)]
pub struct Approvals {
    repository: Arc<dyn ApprovalRepository>,
    limits: ApprovalLimits,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// An approval id from a caller: bounded; anything else is no approval of
/// theirs.
fn checked_id(id: &str) -> Result<&str, FieldViolation> {
    if id.is_empty() {
        return Err(FieldViolation::new("approval_id", "is required"));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(FieldViolation::new(
            "approval_id",
            format!("at most {MAX_ID_BYTES} bytes"),
        ));
    }
    Ok(id)
}

impl Approvals {
    /// Approvals kept in `repository`, within `limits`.
    pub fn new(repository: Arc<dyn ApprovalRepository>, limits: ApprovalLimits) -> Self {
        Self { repository, limits }
    }

    /// The limits in force.
    pub fn limits(&self) -> ApprovalLimits {
        self.limits
    }

    /// The gate on a tool call, after the policy decided: `gate` is the
    /// rule's approval gate when it set one. A presented `approval_id` is
    /// used (marked used before the call goes out, whatever the tool then
    /// answers) and lets the call run; without one, a gated call gets a new
    /// pending approval ([`ApprovalError::Pending`]). A denied approval is
    /// [`ApprovalError::Denied`]; one that does not fit, or cannot be used,
    /// is [`ApprovalError::Refused`].
    pub async fn gate(
        &self,
        caller: &Principal,
        call: GatedCall<'_>,
        approval_id: Option<&str>,
        gate: Option<Gate>,
    ) -> Result<(), ApprovalError> {
        if approval_id.is_none() && gate.is_none() {
            // Nothing to bind: the digest is not worth its cost.
            return Ok(());
        }
        let now = switchboard_db::now_millis();
        let binding = Binding {
            org_id: caller.org_id.clone(),
            requester: caller.user_id.clone(),
            integration_id: call.integration_id.to_owned(),
            tool_name: call.tool.to_owned(),
            arguments_digest: arguments_digest(&Value::Object(call.arguments.clone())),
        };
        match (approval_id, gate) {
            (Some(id), _) => self.redeem(checked_id(id)?, &binding, now).await,
            (None, Some(gate)) => {
                let approval = self.create(binding, call.arguments, gate, now).await?;
                Err(ApprovalError::Pending(Box::new(approval)))
            }
            (None, None) => Ok(()),
        }
    }

    async fn redeem(&self, id: &str, call: &Binding, now: i64) -> Result<(), ApprovalError> {
        if self.repository.redeem(id, call, now).await? {
            tracing::info!(approval_id = id, tool = %call.tool_name, "approval used");
            return Ok(());
        }
        let Some(approval) = self.repository.get(&call.org_id, id).await? else {
            return Err(ApprovalError::Refused(RedeemRefusal::NotFound));
        };
        let refused = refusal(
            &approval.binding,
            approval.state,
            &approval.comment,
            approval.expires_at,
            call,
            now,
        )
        // Approved and fitting, yet not redeemed: another call used it
        // meanwhile.
        .unwrap_or(RedeemRefusal::AlreadyUsed);
        match refused {
            RedeemRefusal::Denied { .. } => Err(ApprovalError::Denied(Box::new(approval))),
            refused => Err(ApprovalError::Refused(refused)),
        }
    }

    async fn create(
        &self,
        binding: Binding,
        arguments: &Map<String, Value>,
        gate: Gate,
        now: i64,
    ) -> Result<Approval, ApprovalError> {
        let approval = Approval {
            id: uuid::Uuid::now_v7().to_string(),
            binding,
            arguments_json: Value::Object(arguments.clone()).to_string(),
            gate,
            state: ApprovalState::Pending,
            decided_by: None,
            comment: String::new(),
            created_at: now,
            decided_at: None,
            expires_at: now.saturating_add(millis(self.limits.decide_within)),
        };
        let max = self.limits.max_pending_per_org;
        if !self.repository.create(&approval, max, now).await? {
            return Err(ApprovalError::LimitReached(format!(
                "the organization has {max} approvals waiting for a decision, the most it may; decide some first"
            )));
        }
        tracing::info!(approval_id = %approval.id, tool = %approval.binding.tool_name, rule = %approval.gate.rule, "approval required");
        Ok(approval)
    }

    /// Whether `caller` may see `approval`: its requester, a holder of its
    /// approver role, or an admin.
    fn visible(caller: &Principal, approval: &Approval) -> bool {
        approval.binding.requester == caller.user_id
            || caller.has_role(&approval.gate.approver_role)
            || caller.is_admin()
    }

    /// One approval the caller may see; another's is NOT_FOUND.
    pub async fn get(&self, caller: &Principal, id: &str) -> Result<Approval, ApprovalError> {
        let id = checked_id(id)?;
        match self.repository.get(&caller.org_id, id).await? {
            Some(approval) if Self::visible(caller, &approval) => Ok(approval),
            _ => Err(ApprovalError::NotFound),
        }
    }

    /// Approves or denies a pending approval: the caller must hold its
    /// approver role, and be someone other than the requester unless the
    /// rule lets the requester decide. Returns the decided approval.
    pub async fn decide(
        &self,
        caller: &Principal,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<Approval, ApprovalError> {
        if comment.len() > self.limits.max_comment_bytes {
            return Err(FieldViolation::new(
                "comment",
                format!("at most {} bytes", self.limits.max_comment_bytes),
            )
            .into());
        }
        let approval = self.get(caller, id).await?;
        if !caller.has_role(&approval.gate.approver_role) {
            return Err(ApprovalError::Forbidden(
                "deciding this approval needs the approver role its rule names",
            ));
        }
        if approval.binding.requester == caller.user_id && !approval.gate.caller_may_approve {
            return Err(ApprovalError::Forbidden(
                "the requester may not decide their own approval under this rule",
            ));
        }
        let now = switchboard_db::now_millis();
        let state = approval.state_at(now);
        if state != ApprovalState::Pending {
            return Err(ApprovalError::Decided(state));
        }
        let decision = Decision {
            approve,
            decided_by: caller.user_id.clone(),
            comment: comment.to_owned(),
            decided_at: now,
            expires_at: if approve {
                now.saturating_add(millis(self.limits.use_within))
            } else {
                approval.expires_at
            },
        };
        if !self
            .repository
            .decide(&caller.org_id, &approval.id, &decision)
            .await?
        {
            // Decided through another replica meanwhile.
            let current = self.get(caller, &approval.id).await?;
            return Err(ApprovalError::Decided(current.state_at(now)));
        }
        tracing::info!(approval_id = %approval.id, approve, "approval decided");
        self.get(caller, &approval.id).await
    }

    /// The caller's approvals and those they may decide (all of the
    /// organization's for an admin), newest first: at most `limit`, older
    /// than `before`.
    pub async fn list(
        &self,
        caller: &Principal,
        states: Vec<ApprovalState>,
        before: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<Approval>, ApprovalError> {
        let visible_to = (!caller.is_admin()).then(|| {
            let roles = caller
                .roles
                .iter()
                .take(MAX_LISTED_ROLES)
                .cloned()
                .collect();
            (caller.user_id.clone(), roles)
        });
        let query = ApprovalQuery {
            org_id: caller.org_id.clone(),
            visible_to,
            states,
            before,
            limit,
            now: switchboard_db::now_millis(),
        };
        Ok(self.repository.list(&query).await?)
    }
}
