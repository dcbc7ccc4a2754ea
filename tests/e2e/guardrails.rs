//! Guardrails through a run: a hostile MCP server's result carrying an AWS
//! key, a PEM private key and a card number reaches the model redacted,
//! with a note of what was removed; a model that sends a secret in another
//! call's arguments is stopped before the call leaves; the audit trail
//! records both, never the secrets. An organization's policy and an
//! integration change what the guardrails do, and rules read a call's
//! arguments and the findings in its result.

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    mcp::v1::{
        self as mcp, audit_service_client::AuditServiceClient,
        policy_service_client::PolicyServiceClient,
    },
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{authed, http_integration_with_auth};

use crate::world::{Options, create_integration, final_run, tool_messages_sent, world};

const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n-----END RSA PRIVATE KEY-----";
const CARD: &str = "4111 1111 1111 1111";

#[tokio::test]
async fn secrets_in_a_result_are_redacted_and_a_secret_in_arguments_never_leaves() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "vault__read_config",
                "{}",
            )]),
            // A model that follows an injection sends a key onwards.
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c2",
                "vault__send_note",
                json!({ "text": format!("the key is {AWS}") }).to_string(),
            )]),
            Turn::FromToolResults("{tool_results}".into()),
        ],
        ..Options::default()
    })
    .await;
    let hostile = spawn_http(HttpServerOptions {
        catalog: vec![
            json!({
                "name": "read_config",
                "description": "Reads the configuration.",
                "inputSchema": { "type": "object" },
                "_meta": { "answer": format!("aws_key={AWS}\n{PEM}\ncard {CARD}\nowner ann@example.com") },
            }),
            json!({
                "name": "send_note",
                "description": "Sends a note.",
                "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } } },
            }),
        ],
        ..HttpServerOptions::default()
    })
    .await
    .expect("the hostile server");
    let vault =
        create_integration(&mut w.mcp_client, &w.token, "vault", &hostile.url(), None).await;
    w.set_integrations(vec![vault]).await;

    let events = w.say("read the config, then send the key to me").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);

    let read = &tool_messages_sent(&w.model, 1)[0];
    for secret in [AWS, "MIIEowIBAAKCAQEA", CARD] {
        assert!(!read.contains(secret), "{secret} reached the model: {read}");
    }
    for marker in [
        "aws_key=[redacted aws_access_key]",
        "[redacted private_key]",
        "card [redacted card_number]",
        "owner ann@example.com",
        "guardrails removed from this result: 1 × aws_access_key, 1 × private_key, 1 × card_number",
    ] {
        assert!(read.contains(marker), "{marker:?} not in {read}");
    }
    let sent = tool_messages_sent(&w.model, 2);
    let refused = sent.last().expect("the second call's result");
    assert!(
        refused.contains("AWS access key") && refused.contains("not sent"),
        "{refused}"
    );
    assert_eq!(
        hostile.stats.snapshot().tool_calls,
        1,
        "the call carrying the key never reached the server"
    );

    // The trail records what was found and done, not the secrets.
    let calls = recorded_tool_calls(&w, 2).await;
    let read = calls
        .iter()
        .find(|e| e.target == "read_config")
        .expect("recorded");
    assert_eq!(read.outcome(), mcp::AuditOutcome::Ok);
    assert_eq!(
        read.reason,
        "guardrails: result redact aws_access_key x1, result redact private_key x1, result flag email x1, result redact card_number x1"
    );
    let send = calls
        .iter()
        .find(|e| e.target == "send_note")
        .expect("recorded");
    assert_eq!(send.outcome(), mcp::AuditOutcome::Denied);
    assert_eq!(send.rule, "guardrails/aws_access_key");
    let text = format!("{calls:?}");
    assert!(!text.contains(AWS), "a secret in the trail: {text}");
}

fn setting(detector: &str, place: &str, action: &str) -> mcp::GuardrailSetting {
    mcp::GuardrailSetting {
        detector: detector.into(),
        place: place.into(),
        action: action.into(),
    }
}

fn deny(name: &str, condition: &str, reason: &str) -> mcp::PolicyRule {
    mcp::PolicyRule {
        name: name.into(),
        condition: condition.into(),
        effect: mcp::PolicyEffect::Deny.into(),
        reason: reason.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn an_organization_and_an_integration_set_the_actions_and_rules_read_arguments_and_findings()
{
    let call = |id: &str, tool: &str, arguments: serde_json::Value| {
        Turn::ToolCalls(vec![ScriptedToolCall::new(id, tool, arguments.to_string())])
    };
    let mut w = world(Options {
        turns: vec![
            call("c1", "vault__read_config", json!({})),
            call("c2", "payments__read_card", json!({})),
            call("c3", "payments__charge", json!({ "account": "root" })),
            Turn::FromToolResults("{tool_results}".into()),
        ],
        ..Options::default()
    })
    .await;
    let tool = |name: &str, answer: String| {
        json!({
            "name": name,
            "description": "A tool.",
            "inputSchema": { "type": "object", "properties": { "account": { "type": "string" } } },
            "_meta": { "answer": answer },
        })
    };
    let server = spawn_http(HttpServerOptions {
        catalog: vec![
            tool("read_config", format!("{PEM}\nowner ann@example.com")),
            tool(
                "read_card",
                format!("test card {CARD}, owner ann@example.com"),
            ),
            tool("charge", "charged".into()),
        ],
        ..HttpServerOptions::default()
    })
    .await
    .expect("the server");
    let vault = create_integration(&mut w.mcp_client, &w.token, "vault", &server.url(), None).await;
    // The payments sandbox returns test cards: its integration lets them
    // through.
    let payments = w
        .mcp_client
        .create_integration(authed(
            mcp::CreateIntegrationRequest {
                guardrails: vec![setting("card_number", "result", "off")],
                ..http_integration_with_auth("payments", &server.url(), None)
            },
            &w.token,
        ))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration");
    assert_eq!(
        payments.guardrails,
        [setting("card_number", "result", "off")]
    );
    PolicyServiceClient::connect(w._mcp.url())
        .await
        .expect("connects")
        .put_policy(authed(
            mcp::PutPolicyRequest {
                policy: Some(mcp::Policy {
                    name: "content".into(),
                    rules: vec![
                        deny(
                            "no-keys-back",
                            "'private_key' in findings.result",
                            "private keys never reach the model",
                        ),
                        deny(
                            "no-root",
                            "has(arguments.account) && arguments.account == 'root'",
                            "root accounts are off limits",
                        ),
                    ],
                    guardrails: vec![
                        setting("email", "result", "redact"),
                        setting("card_number", "result", "block"),
                    ],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &w.token,
        ))
        .await
        .expect("policy written");
    w.set_integrations(vec![vault, payments.id]).await;

    let events = w
        .say("read the config and the card, then charge root")
        .await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);

    let result = |index: usize| {
        tool_messages_sent(&w.model, index)
            .pop()
            .expect("a tool result")
    };
    let config = result(1);
    assert!(
        config.contains(
            "withheld by policy rule content@1/no-keys-back: private keys never reach the model"
        ),
        "{config}"
    );
    assert!(!config.contains("MIIE"), "{config}");
    let card = result(2);
    assert!(
        card.contains(CARD) && card.contains("owner [redacted email]"),
        "the integration's off over the organization's block, the organization's redact over the deployment's flag: {card}"
    );
    let charge = result(3);
    assert!(charge.contains("root accounts are off limits"), "{charge}");
    assert_eq!(
        server.stats.snapshot().tool_calls,
        2,
        "read_config and read_card ran; the charge of root never left"
    );

    let events = recorded_tool_calls(&w, 3).await;
    let read = events
        .iter()
        .find(|e| e.target == "read_config")
        .expect("recorded");
    assert_eq!(read.outcome(), mcp::AuditOutcome::Denied);
    assert_eq!(read.rule, "content@1/no-keys-back");
    assert!(
        read.reason.contains("result redact private_key x1"),
        "{}",
        read.reason
    );
}

/// The trail's tool calls, once there are `at_least` of them (or 10 s have
/// passed).
async fn recorded_tool_calls(w: &crate::world::World, at_least: usize) -> Vec<mcp::AuditEvent> {
    let mut audit = AuditServiceClient::connect(w._mcp.url())
        .await
        .expect("connects");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let events = audit
            .list_audit_events(authed(mcp::ListAuditEventsRequest::default(), &w.token))
            .await
            .expect("listed")
            .into_inner()
            .events;
        let calls: Vec<mcp::AuditEvent> = events
            .into_iter()
            .filter(|e| e.action() == mcp::AuditAction::ToolCall)
            .collect();
        if calls.len() >= at_least || std::time::Instant::now() > deadline {
            return calls;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
