//! Tool policies seen from a run: mcp-service enforces them for
//! runs-service as for any caller, so a model is never offered a tool a
//! rule denies.

use switchboard_proto::mcp::v1::{self as mcp, policy_service_client::PolicyServiceClient};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;

use crate::world::{Options, final_run, tool_messages_sent, tools_offered, world};

#[tokio::test]
async fn a_runs_model_is_not_offered_a_tool_a_rule_denies() {
    let mut w = world(Options {
        turns: vec![
            // The model names the denied tool anyway.
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__fail",
                r#"{"message":"boom"}"#,
            )]),
            Turn::FromToolResults("{last_tool_result}".into()),
        ],
        ..Options::default()
    })
    .await;
    let mut policies = PolicyServiceClient::connect(w._mcp.url())
        .await
        .expect("connects");
    policies
        .put_policy(authed(
            mcp::PutPolicyRequest {
                policy: Some(mcp::Policy {
                    name: "no-failures".into(),
                    rules: vec![mcp::PolicyRule {
                        name: "deny-fail".into(),
                        condition: "request.kind == 'tool' && tool.name == 'fail'".into(),
                        effect: mcp::PolicyEffect::Deny.into(),
                        reason: "failing is not allowed here".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &w.token,
        ))
        .await
        .expect("policy written");
    let events = w.say("try to fail").await;
    final_run(&events);
    let offered = tools_offered(&w.model, 0);
    assert!(offered.contains(&"example__echo".to_owned()), "{offered:?}");
    assert!(
        !offered.contains(&"example__fail".to_owned()),
        "{offered:?}"
    );
    let told = tool_messages_sent(&w.model, 1);
    assert_eq!(told.len(), 1);
    assert!(told[0].contains("example__fail"), "{told:?}");
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        0,
        "the denied tool never ran"
    );
}
