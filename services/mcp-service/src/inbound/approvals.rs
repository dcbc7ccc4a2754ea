//! The `switchboard.mcp.v1.ApprovalService` handlers, and an approval as
//! ExecuteTool answers with it.

use switchboard_proto::mcp::v1::{self as pb, approval_service_server::ApprovalService};
use switchboard_server::{
    paging::{decode_page_token, encode_page_token, page_size, timestamp},
    principal,
};
use tonic::{Request, Response, Status};

use crate::domain::{
    approvals::{Approval, ApprovalState, service::Approvals},
    audit::{AuditOutcome, AuditRecord, Auditor},
    error::McpError,
};

/// The ApprovalService API; each decision goes to the audit trail.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalApi {
    approvals: Approvals,
    auditor: Option<Auditor>,
}

impl ApprovalApi {
    pub(crate) fn new(approvals: Approvals, auditor: Option<Auditor>) -> Self {
        Self { approvals, auditor }
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn proto_state(state: ApprovalState) -> pb::ApprovalState {
    match state {
        ApprovalState::Pending => pb::ApprovalState::Pending,
        ApprovalState::Approved => pb::ApprovalState::Approved,
        ApprovalState::Denied => pb::ApprovalState::Denied,
        ApprovalState::Used => pb::ApprovalState::Used,
        ApprovalState::Expired => pb::ApprovalState::Expired,
    }
}

fn domain_state(value: i32) -> Result<ApprovalState, McpError> {
    match pb::ApprovalState::try_from(value) {
        Ok(pb::ApprovalState::Pending) => Ok(ApprovalState::Pending),
        Ok(pb::ApprovalState::Approved) => Ok(ApprovalState::Approved),
        Ok(pb::ApprovalState::Denied) => Ok(ApprovalState::Denied),
        Ok(pb::ApprovalState::Used) => Ok(ApprovalState::Used),
        Ok(pb::ApprovalState::Expired) => Ok(ApprovalState::Expired),
        _ => Err(McpError::invalid("states", "not a state of an approval")),
    }
}

/// An approval on the wire, its state as of now.
pub(crate) fn proto_approval(approval: &Approval) -> pb::Approval {
    let now = switchboard_db::now_millis();
    pb::Approval {
        id: approval.id.clone(),
        requester: approval.binding.requester.clone(),
        integration_id: approval.binding.integration_id.clone(),
        tool_name: approval.binding.tool_name.clone(),
        arguments_json: approval.arguments_json.clone(),
        arguments_digest: approval.binding.arguments_digest.clone(),
        rule: approval.gate.rule.clone(),
        reason: approval.gate.reason.clone(),
        approver_role: approval.gate.approver_role.clone(),
        requester_may_approve: approval.gate.caller_may_approve,
        state: proto_state(approval.state_at(now)).into(),
        decided_by: approval.decided_by.clone().unwrap_or_default(),
        comment: approval.comment.clone(),
        create_time: Some(timestamp(approval.created_at)),
        decide_time: approval.decided_at.map(timestamp),
        expire_time: Some(timestamp(approval.expires_at)),
    }
}

/// ExecuteTool's answer to a gated call: the tool has not run, and
/// `approval` says why and what to do.
pub(crate) fn gated_response(
    approval: &Approval,
    reason: pb::ToolFailureReason,
) -> pb::ExecuteToolResponse {
    let tool = &approval.binding.tool_name;
    let error_message = if reason == pb::ToolFailureReason::ApprovalDenied {
        if approval.comment.is_empty() {
            format!("the call of `{tool}` was not approved")
        } else {
            format!(
                "the call of `{tool}` was not approved: {}",
                approval.comment
            )
        }
    } else if approval.gate.reason.is_empty() {
        format!("the call of `{tool}` needs an approval")
    } else {
        format!(
            "the call of `{tool}` needs an approval: {}",
            approval.gate.reason
        )
    };
    pb::ExecuteToolResponse {
        is_error: true,
        error_message,
        failure_reason: reason.into(),
        approval: Some(proto_approval(approval)),
        ..Default::default()
    }
}

#[tonic::async_trait]
impl ApprovalService for ApprovalApi {
    async fn list_approvals(
        &self,
        request: Request<pb::ListApprovalsRequest>,
    ) -> Reply<pb::ListApprovalsResponse> {
        let caller = principal(&request)?.clone();
        let request = request.get_ref();
        let limit = page_size("page_size", request.page_size).map_err(McpError::from)?;
        let before =
            decode_page_token("page_token", &request.page_token).map_err(McpError::from)?;
        let states = if request.states.is_empty() {
            vec![ApprovalState::Pending]
        } else {
            request
                .states
                .iter()
                .map(|s| domain_state(*s))
                .collect::<Result<Vec<_>, _>>()?
        };
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let approvals = self.approvals.list(&caller, states, before, limit).await?;
        let next_page_token = match approvals.last() {
            Some(last) if approvals.len() >= limit => {
                encode_page_token(Some((last.created_at, last.id.as_str())))
            }
            _ => String::new(),
        };
        Ok(Response::new(pb::ListApprovalsResponse {
            approvals: approvals.iter().map(proto_approval).collect(),
            next_page_token,
        }))
    }

    async fn get_approval(
        &self,
        request: Request<pb::GetApprovalRequest>,
    ) -> Reply<pb::GetApprovalResponse> {
        let caller = principal(&request)?.clone();
        let approval = self
            .approvals
            .get(&caller, &request.get_ref().approval_id)
            .await?;
        Ok(Response::new(pb::GetApprovalResponse {
            approval: Some(proto_approval(&approval)),
        }))
    }

    async fn decide_approval(
        &self,
        request: Request<pb::DecideApprovalRequest>,
    ) -> Reply<pb::DecideApprovalResponse> {
        let caller = principal(&request)?.clone();
        let request = request.get_ref();
        let approval = self
            .approvals
            .decide(
                &caller,
                &request.approval_id,
                request.approve,
                &request.comment,
            )
            .await?;
        if let Some(auditor) = &self.auditor {
            let outcome = if approval.state == ApprovalState::Denied {
                AuditOutcome::Denied
            } else {
                AuditOutcome::Ok
            };
            let mut record = AuditRecord::approval(
                &caller,
                &approval.id,
                &approval.binding.integration_id,
                &approval.binding.tool_name,
                outcome,
                true,
            );
            record.rule.clone_from(&approval.gate.rule);
            record.reason.clone_from(&approval.comment);
            auditor.record(record).await;
        }
        Ok(Response::new(pb::DecideApprovalResponse {
            approval: Some(proto_approval(&approval)),
        }))
    }
}
