//! `switchboard approvals`: a gated call listed, approved and then run
//! once; another denied.

use std::sync::atomic::Ordering;

use serde_json::json;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::authed;

use crate::world::World;

/// ExecuteTool of `add` as the world's user, with `approval_id`.
async fn add(
    world: &World,
    integration: &str,
    approval_id: Option<&str>,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    let mut client = McpServiceClient::connect(world.mcp_url.clone())
        .await
        .expect("connects");
    client
        .execute_tool(authed(
            pb::ExecuteToolRequest {
                integration_id: integration.to_owned(),
                tool_name: "add".into(),
                arguments: json_to_struct(&json!({"a": 1, "b": 2})),
                approval_id: approval_id.map(str::to_owned),
                ..Default::default()
            },
            &world.token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn a_gated_call_is_listed_approved_and_runs_once_and_another_is_denied() {
    let world = World::start(Vec::new()).await;
    let (integration, _) = world.agent(&[]).await;
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("gate.toml");
    std::fs::write(
        &file,
        "name = \"gate\"\ndefault_effect = \"allow\"\n[[rules]]\nname = \"add\"\ncondition = \"tool.name == 'add'\"\neffect = \"require_approval\"\nreason = \"sums are audited\"\napprover_role = \"admin\"\ncaller_may_approve = true\n",
    )
    .expect("written");
    world
        .ok(&["policies", "put", file.to_str().expect("utf-8")])
        .await;
    let gated = add(&world, &integration, None).await.expect("answered");
    let approval = gated.approval.expect("an approval");
    let listed = world.ok(&["approvals", "list"]).await;
    assert!(listed.contains(&approval.id), "{listed}");
    assert!(listed.contains("sums are audited"), "{listed}");
    let approved = world
        .json(&["approvals", "approve", &approval.id, "--comment", "ok"])
        .await;
    assert_eq!(approved["state"], "APPROVAL_STATE_APPROVED");
    let ran = add(&world, &integration, Some(&approval.id))
        .await
        .expect("runs");
    assert!(!ran.is_error, "{ran:?}");
    assert_eq!(world.upstream.stats.tool_calls.load(Ordering::Relaxed), 1);
    let used = world.json(&["approvals", "list", "--state", "used"]).await;
    assert_eq!(used["approvals"][0]["id"], approval.id.as_str());

    let second = add(&world, &integration, None)
        .await
        .expect("answered")
        .approval
        .expect("an approval");
    let denied = world
        .ok(&["approvals", "deny", &second.id, "--comment", "not now"])
        .await;
    assert!(denied.contains("denied"), "{denied}");
    let answer = add(&world, &integration, Some(&second.id))
        .await
        .expect("answered");
    assert_eq!(
        answer.failure_reason(),
        pb::ToolFailureReason::ApprovalDenied
    );
    let again = world.run(&["approvals", "approve", &second.id]).await;
    assert!(!again.status.success(), "decided already");
    assert_eq!(world.upstream.stats.tool_calls.load(Ordering::Relaxed), 1);
}

/// A policy that gates `add` behind an admin's approval, admins deciding
/// their own calls too.
async fn gate_add(world: &World) {
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("gate.toml");
    std::fs::write(
        &file,
        "name = \"gate\"\n[[rules]]\nname = \"add\"\ncondition = \"tool.name == 'add'\"\neffect = \"require_approval\"\nreason = \"sums are audited\"\napprover_role = \"admin\"\ncaller_may_approve = true\n",
    )
    .expect("written");
    world
        .ok(&["policies", "put", file.to_str().expect("utf-8")])
        .await;
}

#[tokio::test]
async fn chat_asks_for_a_word_on_a_gated_call_and_runs_it_once_or_tells_the_model_no() {
    use switchboard_scripted_model::{ScriptedToolCall, Turn};

    let add_call = |id: &str| {
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            id,
            "example__add",
            r#"{"a":2,"b":3}"#,
        )])
    };
    let world = World::start(vec![
        add_call("c1"),
        Turn::FromToolResults("sum: {last_tool_result}".into()),
        add_call("c2"),
        Turn::FromToolResults("then: {last_tool_result}".into()),
    ])
    .await;
    let (_, agent_id) = world.agent(&[]).await;
    gate_add(&world).await;
    let output = world
        .run_with_input(
            &["chat", &agent_id, "-m", "add", "-m", "again"],
            "y fine\nn sums are frozen\n",
        )
        .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            r#"⏸ `example__add` with {"a":2,"b":3} needs an approval (rule gate@1/add: sums are audited)"#
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("⏸ example__add waits for an approval"),
        "{stdout}"
    );
    assert!(stdout.contains("sum: 5\n"), "{stdout}");
    assert!(
        stdout.contains(
            "then: MCP tool execution failed: the call of `add` was not approved: sums are frozen\n"
        ),
        "{stdout}"
    );
    assert_eq!(
        world.upstream.stats.tool_calls.load(Ordering::Relaxed),
        1,
        "the approved call ran once, the denied one never"
    );
}
