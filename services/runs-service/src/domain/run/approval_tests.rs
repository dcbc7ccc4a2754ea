//! A tool call a policy rule gates behind an approval: the run pauses, the
//! resume makes the call again with its approval, and the tool runs once,
//! or the model reads the denial.

use switchboard_auth::Principal;

use super::tests::{World, call, caller, ended, finished, with_integrations};
use crate::{
    domain::{
        entities::{PendingApproval, Run, RunStatus},
        error::RunsError,
        events::{RunEvent, ToolCallStatus},
        input::{ApprovalChoice, RunInput},
        ports::Caller,
    },
    fakes::{APPROVER_ROLE, FakeApprovalState, FakeMcp, ScriptedTurn, ToolBehaviour},
};

/// A world whose agent calls `i1__wipe`, a gated tool, then says "done".
async fn gated_world() -> World {
    let mcp = FakeMcp::default().tool("i1", "wipe", ToolBehaviour::Gated("wiped".into()));
    let script = vec![
        ScriptedTurn::Call(vec![call("i1__wipe", r#"{"repo":"old"}"#)]),
        ScriptedTurn::Say("done".into()),
    ];
    World::new(mcp, with_integrations(&["i1"]), script).await
}

fn approver() -> Caller {
    Caller {
        principal: Principal::new("org", "user", vec![APPROVER_ROLE.into()]),
        token: None,
    }
}

/// The approval the run paused for, with the call's id.
fn asked(events: &[RunEvent]) -> (String, PendingApproval) {
    events
        .iter()
        .find_map(|e| match e {
            RunEvent::ToolApprovalRequired { id, approval, .. } => {
                Some((id.clone(), approval.clone()))
            }
            _ => None,
        })
        .expect("the run asks for an approval")
}

fn resume(run: &Run, call_id: &str, approve: Option<bool>, comment: &str) -> RunInput {
    RunInput::ClientToolResults {
        run_id: run.id,
        results: Vec::new(),
        answers: Vec::new(),
        approvals: vec![ApprovalChoice {
            tool_call_id: call_id.to_owned(),
            approve,
            comment: comment.to_owned(),
        }],
    }
}

/// The text of the model's last request.
fn last_request(world: &World) -> String {
    let requests = world.models.requests();
    format!("{:?}", requests.last().expect("a request").messages)
}

#[tokio::test]
async fn a_gated_call_pauses_the_run_and_runs_once_when_approved() {
    let world = gated_world().await;
    let events = world.say("wipe it").await;
    let paused = ended(&events).clone();
    assert_eq!(paused.status, RunStatus::RequiresAction);
    let (call_id, approval) = asked(&events);
    assert_eq!(approval.tool, "wipe");
    assert_eq!(approval.asked.rule, "tools@1/destructive");
    assert_eq!(
        finished(&events),
        [(
            "i1__wipe".to_owned(),
            ToolCallStatus::ApprovalRequired,
            String::new()
        )]
    );
    assert!(world.mcp.calls().is_empty(), "the tool has not run");
    assert_eq!(world.models.requests().len(), 1);

    // Still pending: the run pauses again for the same approval, and
    // neither the tool nor the model is called.
    let events = world.run(resume(&paused, &call_id, None, "")).await;
    assert_eq!(ended(&events).status, RunStatus::RequiresAction);
    assert_eq!(asked(&events).1.asked.id, approval.asked.id);
    assert!(world.mcp.calls().is_empty());
    assert_eq!(world.models.requests().len(), 1);

    world
        .mcp
        .approvals()
        .set(&approval.asked.id, true, "")
        .expect("an approver approves");
    let events = world.run(resume(&paused, &call_id, None, "")).await;
    assert_eq!(ended(&events).status, RunStatus::Completed);
    assert_eq!(world.mcp.calls().len(), 1, "the tool ran once");
    assert!(last_request(&world).contains("wiped"));
    assert_eq!(
        world.mcp.approvals().state(&approval.asked.id),
        Some(FakeApprovalState::Used)
    );

    // The run is no longer paused: a second resume makes no call.
    let again = world
        .run_as(caller(), resume(&paused, &call_id, None, ""))
        .await;
    assert!(matches!(again, Err(RunsError::FailedPrecondition(_))));
    assert_eq!(world.mcp.calls().len(), 1);
}

#[tokio::test]
async fn a_denied_approval_reaches_the_model_as_text_and_the_run_goes_on() {
    let world = gated_world().await;
    let events = world.say("wipe it").await;
    let paused = ended(&events).clone();
    let (call_id, approval) = asked(&events);
    world
        .mcp
        .approvals()
        .set(&approval.asked.id, false, "not on a Friday")
        .expect("an approver denies");
    let events = world.run(resume(&paused, &call_id, None, "")).await;
    assert_eq!(ended(&events).status, RunStatus::Completed);
    let denial = "MCP tool execution failed: the call of `wipe` was not approved: not on a Friday";
    assert_eq!(
        finished(&events),
        [(
            "i1__wipe".to_owned(),
            ToolCallStatus::Failed,
            denial.to_owned()
        )]
    );
    assert!(last_request(&world).contains(denial));
    assert!(world.mcp.calls().is_empty(), "a denied call never runs");
}

#[tokio::test]
async fn a_caller_without_the_approver_role_cannot_approve_and_the_run_stays_paused() {
    let world = gated_world().await;
    let events = world.say("wipe it").await;
    let paused = ended(&events).clone();
    let (call_id, approval) = asked(&events);

    let refused = world
        .run_as(caller(), resume(&paused, &call_id, Some(true), "fine"))
        .await;
    assert!(
        matches!(&refused, Err(RunsError::NotAllowed(m)) if m.contains("approver role")),
        "{refused:?}"
    );
    assert_eq!(
        world.repo.run(paused.id).expect("stored").status,
        RunStatus::RequiresAction
    );
    assert_eq!(
        world.mcp.approvals().state(&approval.asked.id),
        Some(FakeApprovalState::Pending)
    );

    // An approver resuming with their decision decides it and the call
    // runs once.
    let events = world
        .run_as(approver(), resume(&paused, &call_id, Some(true), "fine"))
        .await
        .expect("the run resumes");
    assert_eq!(ended(&events).status, RunStatus::Completed);
    assert_eq!(world.mcp.calls().len(), 1);
}

#[tokio::test]
async fn an_approver_who_denies_on_resume_has_the_model_read_their_words() {
    let world = gated_world().await;
    let events = world.say("wipe it").await;
    let paused = ended(&events).clone();
    let (call_id, _) = asked(&events);
    let events = world
        .run_as(
            approver(),
            resume(&paused, &call_id, Some(false), "use archive"),
        )
        .await
        .expect("the run resumes");
    assert_eq!(ended(&events).status, RunStatus::Completed);
    assert!(last_request(&world).contains("was not approved: use archive"));
    assert!(world.mcp.calls().is_empty());
}

#[tokio::test]
async fn a_resume_without_a_word_on_the_gated_call_is_refused() {
    let world = gated_world().await;
    let events = world.say("wipe it").await;
    let paused = ended(&events).clone();
    let missing = world
        .run_as(
            caller(),
            RunInput::ClientToolResults {
                run_id: paused.id,
                results: Vec::new(),
                answers: Vec::new(),
                approvals: Vec::new(),
            },
        )
        .await;
    assert!(matches!(missing, Err(RunsError::Invalid(_))), "{missing:?}");
    assert_eq!(
        world.repo.run(paused.id).expect("stored").status,
        RunStatus::RequiresAction
    );
}
