//! Approval gates over real gRPC against the example MCP server: a policy
//! rule holds `add`, an approver decides through ApprovalService, and the
//! requester's second call runs the tool exactly once.

use std::{sync::atomic::Ordering, time::Duration};

use serde_json::{Value, json};
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_mcp_service::Config;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{
        self as pb, approval_service_client::ApprovalServiceClient,
        audit_service_client::AuditServiceClient, policy_service_client::PolicyServiceClient,
    },
};
use switchboard_test_support::{DbKind, db_tests, token};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt as _;

use crate::support::{Harness, admin, create, http_integration, req, start_with};

struct Setup {
    h: Harness,
    approvals: ApprovalServiceClient<Channel>,
    upstream: RunningHttpServer,
    id: String,
}

fn requester() -> String {
    token("org-a", "alice", &["member"])
}

fn approver() -> String {
    token("org-a", "bob", &["member", "approver"])
}

/// A policy holding `add` for an approver, written through PolicyService.
async fn setup(kind: DbKind, configure: impl FnOnce(&mut Config)) -> Setup {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start_with(kind, configure).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await
    .id;
    let mut policies = PolicyServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    let rule = pb::PolicyRule {
        name: "add-needs-approval".into(),
        condition: "tool.name == 'add'".into(),
        effect: pb::PolicyEffect::RequireApproval.into(),
        reason: "adding needs a second pair of eyes".into(),
        approver_role: "approver".into(),
        caller_may_approve: false,
    };
    let policy = pb::Policy {
        name: "gates".into(),
        rules: vec![rule],
        ..Default::default()
    };
    policies
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(policy),
                expected_version: 0,
            },
            &admin("org-a"),
        ))
        .await
        .expect("policy written");
    let approvals = ApprovalServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    Setup {
        h,
        approvals,
        upstream,
        id,
    }
}

impl Setup {
    async fn call(
        &mut self,
        token: &str,
        tool: &str,
        arguments: Value,
        approval_id: Option<&str>,
    ) -> Result<pb::ExecuteToolResponse, Status> {
        self.h
            .client
            .execute_tool(req(
                pb::ExecuteToolRequest {
                    integration_id: self.id.clone(),
                    tool_name: tool.into(),
                    arguments: json_to_struct(&arguments),
                    approval_id: approval_id.map(str::to_owned),
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(tonic::Response::into_inner)
    }

    /// A gated call of `add`: the new approval it answers with.
    async fn gated(&mut self, token: &str) -> pb::Approval {
        let response = self
            .call(token, "add", json!({"a": 1, "b": 2}), None)
            .await
            .expect("answered");
        assert!(response.is_error);
        assert_eq!(
            response.failure_reason(),
            pb::ToolFailureReason::ApprovalRequired
        );
        assert_eq!(
            response.error_message,
            "the call of `add` needs an approval: adding needs a second pair of eyes"
        );
        response.approval.expect("an approval")
    }

    async fn decide(
        &mut self,
        token: &str,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<pb::Approval, Status> {
        self.approvals
            .decide_approval(req(
                pb::DecideApprovalRequest {
                    approval_id: id.into(),
                    approve,
                    comment: comment.into(),
                },
                token,
            ))
            .await
            .map(|r| r.into_inner().approval.expect("an approval"))
    }

    async fn list(&mut self, token: &str, states: &[pb::ApprovalState]) -> Vec<String> {
        self.approvals
            .list_approvals(req(
                pb::ListApprovalsRequest {
                    states: states.iter().map(|s| i32::from(*s)).collect(),
                    ..Default::default()
                },
                token,
            ))
            .await
            .expect("listed")
            .into_inner()
            .approvals
            .into_iter()
            .map(|a| a.id)
            .collect()
    }

    fn upstream_calls(&self) -> u64 {
        self.upstream.stats.tool_calls.load(Ordering::Relaxed)
    }
}

/// The code and ErrorInfo reason of a refusal.
fn refusal(status: &Status) -> (Code, String) {
    let details = status.get_error_details();
    let reason = details
        .error_info()
        .map(|i| i.reason.clone())
        .unwrap_or_default();
    (status.code(), reason)
}

async fn an_approved_call_runs_exactly_once(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let approval = s.gated(&requester()).await;
    assert_eq!(approval.state(), pb::ApprovalState::Pending);
    assert_eq!(approval.rule, "gates@1/add-needs-approval");
    assert_eq!(approval.requester, "alice");
    assert_eq!(approval.approver_role, "approver");
    assert_eq!(approval.arguments_digest.len(), 64);
    assert_eq!(s.upstream_calls(), 0, "a gated tool does not run");
    let args = json!({"b": 2, "a": 1});
    let pending = s
        .call(&requester(), "add", args.clone(), Some(&approval.id))
        .await
        .expect_err("still pending");
    assert_eq!(
        refusal(&pending),
        (
            Code::FailedPrecondition,
            "ERROR_REASON_APPROVAL_PENDING".into()
        )
    );
    // The approver sees it; the requester sees their own; others nothing.
    assert_eq!(s.list(&approver(), &[]).await, vec![approval.id.clone()]);
    assert_eq!(s.list(&requester(), &[]).await, vec![approval.id.clone()]);
    let stranger = token("org-a", "carol", &["member"]);
    assert!(s.list(&stranger, &[]).await.is_empty());
    let approved = s
        .decide(&approver(), &approval.id, true, "fine")
        .await
        .expect("approved");
    assert_eq!(approved.state(), pb::ApprovalState::Approved);
    assert_eq!(approved.decided_by, "bob");
    // Keys in another order are the same arguments.
    let ran = s
        .call(&requester(), "add", args.clone(), Some(&approval.id))
        .await
        .expect("runs");
    assert!(!ran.is_error, "{ran:?}");
    assert_eq!(s.upstream_calls(), 1);
    let again = s
        .call(&requester(), "add", args, Some(&approval.id))
        .await
        .expect_err("used");
    assert_eq!(
        refusal(&again),
        (
            Code::FailedPrecondition,
            "ERROR_REASON_APPROVAL_USED".into()
        )
    );
    assert_eq!(s.upstream_calls(), 1, "the tool ran exactly once");
    let redecided = s
        .decide(&approver(), &approval.id, true, "")
        .await
        .expect_err("decided already");
    assert_eq!(
        refusal(&redecided),
        (
            Code::FailedPrecondition,
            "ERROR_REASON_APPROVAL_DECIDED".into()
        )
    );
    assert!(redecided.message().contains("used"), "{redecided:?}");
    let used = s.list(&requester(), &[pb::ApprovalState::Used]).await;
    assert_eq!(used, std::slice::from_ref(&approval.id));
    // The trail holds every step in order: the gated call, the call while
    // pending, the decision (with its rule), the call that ran, the refused
    // reuse; the second decision changed nothing and left no event.
    let mut audit = AuditServiceClient::connect(s.h.server.url())
        .await
        .expect("connects");
    let mut events = audit
        .list_audit_events(req(pb::ListAuditEventsRequest::default(), &admin("org-a")))
        .await
        .expect("listed")
        .into_inner()
        .events;
    events.reverse();
    let steps: Vec<(pb::AuditAction, pb::AuditOutcome)> = events
        .iter()
        .filter(|e| e.action() != pb::AuditAction::IntegrationChange)
        .filter(|e| e.action() != pb::AuditAction::PolicyChange)
        .map(|e| (e.action(), e.outcome()))
        .collect();
    use pb::{AuditAction as A, AuditOutcome as O};
    assert_eq!(
        steps,
        [
            (A::ToolCall, O::PendingApproval),
            (A::ToolCall, O::Denied),
            (A::ApprovalDecided, O::Ok),
            (A::ToolCall, O::Ok),
            (A::ToolCall, O::Denied),
        ]
    );
    // The gated call names the approval it asked for.
    let gated = events
        .iter()
        .find(|e| e.outcome() == O::PendingApproval)
        .expect("the gated call");
    assert_eq!(gated.approval_id, approval.id);
    let decided = events
        .iter()
        .find(|e| e.action() == A::ApprovalDecided)
        .expect("the decision");
    assert_eq!(decided.approval_id, approval.id);
    assert_eq!(decided.rule, "gates@1/add-needs-approval");
    assert_eq!(decided.subject, "bob");
    // The call that ran names the approval it used.
    let ran = events
        .iter()
        .find(|e| e.action() == A::ToolCall && e.outcome() == O::Ok)
        .expect("the call that ran");
    assert_eq!(ran.approval_id, approval.id);
    assert_eq!(ran.subject, "alice");
}

async fn an_approval_fits_only_its_requester_tool_and_arguments(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let approval = s.gated(&requester()).await;
    s.decide(&approver(), &approval.id, true, "")
        .await
        .expect("approved");
    let id = Some(approval.id.as_str());
    let args = json!({"a": 1, "b": 2});
    let cases = [
        (
            approver(),
            "add",
            args.clone(),
            "ERROR_REASON_APPROVAL_OTHER_REQUESTER",
        ),
        (
            requester(),
            "echo",
            json!({"text": "hi"}),
            "ERROR_REASON_APPROVAL_OTHER_TOOL",
        ),
        (
            requester(),
            "add",
            json!({"a": 1, "b": 3}),
            "ERROR_REASON_APPROVAL_OTHER_ARGUMENTS",
        ),
    ];
    for (token, tool, arguments, reason) in cases {
        let status = s
            .call(&token, tool, arguments, id)
            .await
            .expect_err("refused");
        assert_eq!(refusal(&status), (Code::PermissionDenied, reason.into()));
        assert!(!status.message().contains("alice"), "{status:?}");
    }
    let other_org = token("org-b", "alice", &["admin"]);
    let status = s
        .call(&other_org, "add", args.clone(), id)
        .await
        .expect_err("another organization's");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let unknown = s
        .call(
            &requester(),
            "add",
            args.clone(),
            Some("0190c5a1-0000-7000-8000-000000000000"),
        )
        .await
        .expect_err("no such approval");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
    // Ids are bounded: 64 bytes is looked up, 65 is refused unread.
    let at_limit = s
        .call(&requester(), "add", args.clone(), Some(&"a".repeat(64)))
        .await
        .expect_err("no such approval");
    assert_eq!(at_limit.code(), Code::NotFound, "{at_limit:?}");
    let over = s
        .call(&requester(), "add", args.clone(), Some(&"a".repeat(65)))
        .await
        .expect_err("too long");
    assert_eq!(over.code(), Code::InvalidArgument, "{over:?}");
    let empty = s
        .call(&requester(), "add", args.clone(), Some(""))
        .await
        .expect_err("empty");
    assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
    assert_eq!(s.upstream_calls(), 0);
    // None of the misuses used it up.
    let ran = s.call(&requester(), "add", args, id).await.expect("runs");
    assert!(!ran.is_error, "{ran:?}");
    assert_eq!(s.upstream_calls(), 1);
}

async fn concurrent_calls_with_one_approval_run_the_tool_once(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let approval = s.gated(&requester()).await;
    s.decide(&approver(), &approval.id, true, "")
        .await
        .expect("approved");
    let mut calls = Vec::new();
    for _ in 0..8 {
        let mut client = s.h.client.clone();
        let request = pb::ExecuteToolRequest {
            integration_id: s.id.clone(),
            tool_name: "add".into(),
            arguments: json_to_struct(&json!({"a": 1, "b": 2})),
            approval_id: Some(approval.id.clone()),
            ..Default::default()
        };
        calls.push(tokio::spawn(async move {
            client.execute_tool(req(request, &requester())).await
        }));
    }
    let mut ran = 0;
    for call in calls {
        match call.await.expect("joined") {
            Ok(_) => ran += 1,
            Err(status) => assert_eq!(
                refusal(&status),
                (
                    Code::FailedPrecondition,
                    "ERROR_REASON_APPROVAL_USED".into()
                )
            ),
        }
    }
    assert_eq!(ran, 1);
    assert_eq!(s.upstream_calls(), 1);
}

async fn a_denial_is_the_tools_answer_with_the_comment(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let approval = s.gated(&requester()).await;
    let by_requester = s
        .decide(&requester(), &approval.id, true, "")
        .await
        .expect_err("no approver role");
    assert_eq!(by_requester.code(), Code::PermissionDenied);
    // Holding the role is not enough to approve one's own call.
    let own = token("org-a", "dave", &["approver"]);
    let own_approval = s.gated(&own).await;
    let self_approved = s
        .decide(&own, &own_approval.id, true, "")
        .await
        .expect_err("not one's own");
    assert_eq!(self_approved.code(), Code::PermissionDenied);
    let long = "x".repeat(1025);
    let too_long = s
        .decide(&approver(), &approval.id, false, &long)
        .await
        .expect_err("comment too long");
    assert_eq!(too_long.code(), Code::InvalidArgument);
    let denied = s
        .decide(&approver(), &approval.id, false, &"x".repeat(1024))
        .await
        .expect("a comment at the limit");
    assert_eq!(denied.state(), pb::ApprovalState::Denied);
    s.decide(&approver(), &own_approval.id, false, "not today")
        .await
        .expect("denied");
    let answer = s
        .call(&own, "add", json!({"a": 1, "b": 2}), Some(&own_approval.id))
        .await
        .expect("answered");
    assert!(answer.is_error);
    assert_eq!(
        answer.failure_reason(),
        pb::ToolFailureReason::ApprovalDenied
    );
    assert_eq!(
        answer.error_message,
        "the call of `add` was not approved: not today"
    );
    assert_eq!(answer.approval.expect("the approval").comment, "not today");
    assert_eq!(s.upstream_calls(), 0);
}

async fn approvals_expire_and_their_number_is_bounded(kind: DbKind) {
    let mut s = setup(kind, |config| {
        config.approvals.decide_within = Duration::from_millis(300);
        config.approvals.use_within = Duration::from_millis(300);
        config.approvals.max_pending = 2;
    })
    .await;
    let first = s.gated(&requester()).await;
    let second = s.gated(&requester()).await;
    let third = s
        .call(&requester(), "add", json!({"a": 1, "b": 2}), None)
        .await
        .expect_err("too many pending");
    assert_eq!(third.code(), Code::ResourceExhausted, "{third:?}");
    s.decide(&approver(), &second.id, true, "")
        .await
        .expect("approved");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let late = s
        .decide(&approver(), &first.id, true, "")
        .await
        .expect_err("expired");
    assert_eq!(
        refusal(&late),
        (
            Code::FailedPrecondition,
            "ERROR_REASON_APPROVAL_EXPIRED".into()
        )
    );
    let unused = s
        .call(
            &requester(),
            "add",
            json!({"a": 1, "b": 2}),
            Some(&second.id),
        )
        .await
        .expect_err("expired");
    assert_eq!(
        refusal(&unused),
        (
            Code::FailedPrecondition,
            "ERROR_REASON_APPROVAL_EXPIRED".into()
        )
    );
    assert_eq!(
        s.list(&requester(), &[pb::ApprovalState::Expired])
            .await
            .len(),
        2
    );
    // Expired ones no longer count against the bound.
    s.gated(&requester()).await;
    assert_eq!(s.upstream_calls(), 0);
}

db_tests!(
    an_approved_call_runs_exactly_once,
    an_approval_fits_only_its_requester_tool_and_arguments,
    concurrent_calls_with_one_approval_run_the_tool_once,
    a_denial_is_the_tools_answer_with_the_comment,
    approvals_expire_and_their_number_is_bounded,
);
