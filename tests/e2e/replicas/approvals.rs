//! A tool call an mcp-service policy gates behind an approval, across
//! runs-service replicas on one database: the run pauses on one replica, an
//! approver decides, and the run resumes through the other; the example
//! server's call counter shows the tool ran exactly once.

use switchboard_proto::{
    mcp::v1::{
        self as mcp, approval_service_client::ApprovalServiceClient,
        audit_service_client::AuditServiceClient, policy_service_client::PolicyServiceClient,
    },
    runs::v1::{self as runs, execute_run_response::Event, runs_service_client::RunsServiceClient},
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{DbKind, authed, token};
use tonic::{Code, Streaming, transport::Channel};

use super::cluster::{Cluster, cluster, kind_of, rest};
use crate::world::ORG;

/// The model asks for the example server's `sleep` tool (destructive by
/// MCP's defaults: it has no annotations), then repeats its result.
fn gated_turns() -> Vec<Turn> {
    vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "call-1",
            "example__sleep",
            r#"{"ms": 1}"#,
        )]),
        Turn::FromToolResults("{last_tool_result}".into()),
    ]
}

/// Destructive tools need an approver (`approver_role`); `self_approve`
/// lets the requester decide their own call.
async fn gate_destructive_tools(c: &Cluster, approver_role: &str, self_approve: bool) {
    let mut policies = PolicyServiceClient::connect(c.mcp.url())
        .await
        .expect("connects");
    policies
        .put_policy(authed(
            mcp::PutPolicyRequest {
                policy: Some(mcp::Policy {
                    name: "gates".into(),
                    rules: vec![mcp::PolicyRule {
                        name: "destructive".into(),
                        condition: "request.kind == 'tool' && tool.destructive".into(),
                        effect: mcp::PolicyEffect::RequireApproval.into(),
                        reason: "destructive tools need an approver".into(),
                        approver_role: approver_role.into(),
                        caller_may_approve: self_approve,
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &c.token,
        ))
        .await
        .expect("policy written");
}

fn approval_asked(events: &[runs::ExecuteRunResponse]) -> runs::ToolApprovalRequired {
    events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::ToolApprovalRequired(asked)) => Some(asked.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool_approval_required in {events:?}"))
}

fn ended(events: &[runs::ExecuteRunResponse]) -> runs::Run {
    match events.last().and_then(|e| e.event.as_ref()) {
        Some(Event::RunCompleted(done)) => done.run.clone().expect("a run"),
        other => panic!("the run did not complete: {other:?}"),
    }
}

fn tool_result(events: &[runs::ExecuteRunResponse]) -> String {
    events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::ToolCallFinished(done)) => Some(done.result.clone()),
            _ => None,
        })
        .expect("a tool call finished")
}

async fn resume(
    c: &Cluster,
    client: &mut RunsServiceClient<Channel>,
    run_id: &str,
    call_id: &str,
    approve: Option<bool>,
    comment: &str,
) -> Result<Streaming<runs::ExecuteRunResponse>, tonic::Status> {
    let request = runs::ExecuteRunRequest {
        thread_id: c.thread_id.clone(),
        input: Some(runs::execute_run_request::Input::ClientToolResults(
            runs::ClientToolResultsInput {
                run_id: run_id.to_owned(),
                approval_decisions: vec![runs::ToolApprovalDecision {
                    tool_call_id: call_id.to_owned(),
                    approve,
                    comment: comment.to_owned(),
                }],
                ..Default::default()
            },
        )),
        ..Default::default()
    };
    client
        .execute_run(authed(request, &c.token))
        .await
        .map(tonic::Response::into_inner)
}

fn upstream_calls(c: &Cluster) -> u64 {
    c.upstream.stats.snapshot().tool_calls
}

pub(super) async fn a_gated_call_paused_on_one_replica_runs_once_when_resumed_through_the_other(
    kind: DbKind,
) {
    let c = cluster(kind, gated_turns(), 2, |_| {}).await;
    gate_destructive_tools(&c, "approver", false).await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());

    let mut stream = c
        .execute(&mut a, "sleep a moment", false)
        .await
        .expect("started");
    let events = rest(&mut stream).await;
    let paused = ended(&events);
    assert_eq!(paused.status(), runs::RunStatus::RequiresAction);
    let asked = approval_asked(&events);
    assert_eq!(asked.tool_name, "example__sleep");
    assert_eq!(asked.rule, "gates@1/destructive");
    assert_eq!(asked.approver_role, "approver");
    assert_eq!(upstream_calls(&c), 0, "the gated tool has not run");

    // The requester may not approve their own call under this rule: the
    // run stays paused and the approval pending.
    let refused = resume(&c, &mut b, &paused.id, &asked.tool_call_id, Some(true), "")
        .await
        .expect_err("not an approver");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    // Still pending: resuming through the other replica pauses again.
    let mut again = resume(&c, &mut b, &paused.id, &asked.tool_call_id, None, "")
        .await
        .expect("resumed");
    let events = rest(&mut again).await;
    assert_eq!(ended(&events).status(), runs::RunStatus::RequiresAction);
    assert_eq!(approval_asked(&events).approval_id, asked.approval_id);
    assert_eq!(upstream_calls(&c), 0);

    let approver = token(ORG, "approver-e2e", &["approver"]);
    let mut approvals = ApprovalServiceClient::connect(c.mcp.url())
        .await
        .expect("connects");
    approvals
        .decide_approval(authed(
            mcp::DecideApprovalRequest {
                approval_id: asked.approval_id.clone(),
                approve: true,
                comment: "go ahead".into(),
            },
            &approver,
        ))
        .await
        .expect("approved");

    // Both replicas are asked to resume at once: one resumes the run, the
    // other finds it no longer paused, and the tool runs once.
    let (through_a, through_b) = tokio::join!(
        resume(&c, &mut a, &paused.id, &asked.tool_call_id, None, ""),
        resume(&c, &mut b, &paused.id, &asked.tool_call_id, None, ""),
    );
    let mut finished = Vec::new();
    let mut refused = Vec::new();
    for outcome in [through_a, through_b] {
        match outcome {
            Ok(mut stream) => finished.push(rest(&mut stream).await),
            Err(status) => refused.push(status.code()),
        }
    }
    assert_eq!(finished.len(), 1, "one resume runs: {refused:?}");
    let events = &finished[0];
    assert_eq!(ended(events).status(), runs::RunStatus::Completed);
    assert_eq!(upstream_calls(&c), 1, "the tool ran exactly once");
    assert!(!tool_result(events).contains("failed"), "{events:?}");

    // The used approval cannot start the call again.
    let late = resume(&c, &mut b, &paused.id, &asked.tool_call_id, None, "")
        .await
        .expect_err("the run is no longer paused");
    assert_eq!(late.code(), Code::FailedPrecondition);
    assert_eq!(upstream_calls(&c), 1);
    audit_holds_each_step(&c, &asked.approval_id).await;
}

/// mcp-service's audit trail holds the run's steps in order: the gated
/// call, the call while the approval was pending, the approver's decision,
/// the call that ran with the approval; and the chain verifies.
async fn audit_holds_each_step(c: &Cluster, approval_id: &str) {
    use mcp::{AuditAction as A, AuditOutcome as O};
    let mut audit = AuditServiceClient::connect(c.mcp.url())
        .await
        .expect("connects");
    let mut events = audit
        .list_audit_events(authed(mcp::ListAuditEventsRequest::default(), &c.token))
        .await
        .expect("listed")
        .into_inner()
        .events;
    events.reverse();
    let steps: Vec<(A, O, &str, &str)> = events
        .iter()
        .filter(|e| matches!(e.action(), A::ToolCall | A::ApprovalDecided))
        .map(|e| {
            (
                e.action(),
                e.outcome(),
                e.subject.as_str(),
                e.approval_id.as_str(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (A::ToolCall, O::PendingApproval, "user-e2e", approval_id),
            (A::ToolCall, O::Denied, "user-e2e", approval_id),
            (A::ApprovalDecided, O::Ok, "approver-e2e", approval_id),
            (A::ToolCall, O::Ok, "user-e2e", approval_id),
        ]
    );
    let chain = audit
        .verify_audit_chain(authed(mcp::VerifyAuditChainRequest {}, &c.token))
        .await
        .expect("verified")
        .into_inner();
    assert!(chain.intact, "{chain:?}");
}

pub(super) async fn a_denial_given_on_resume_reaches_the_model_as_text(kind: DbKind) {
    let c = cluster(kind, gated_turns(), 2, |_| {}).await;
    // Admins approve, their own calls too.
    gate_destructive_tools(&c, "admin", true).await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());
    let mut stream = c
        .execute(&mut a, "sleep a moment", false)
        .await
        .expect("started");
    let events = rest(&mut stream).await;
    let paused = ended(&events);
    let asked = approval_asked(&events);
    assert!(asked.requester_may_approve);

    let mut resumed = resume(
        &c,
        &mut b,
        &paused.id,
        &asked.tool_call_id,
        Some(false),
        "not during the freeze",
    )
    .await
    .expect("resumed");
    let events = rest(&mut resumed).await;
    assert_eq!(ended(&events).status(), runs::RunStatus::Completed);
    assert_eq!(
        tool_result(&events),
        "MCP tool execution failed: the call of `sleep` was not approved: not during the freeze"
    );
    assert!(events.iter().any(|e| kind_of(e) == "tool_call_finished"));
    assert_eq!(upstream_calls(&c), 0, "a denied call never runs");
}
