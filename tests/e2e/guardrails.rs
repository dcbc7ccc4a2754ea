//! Guardrails through a run: a hostile MCP server's result carrying an AWS
//! key, a PEM private key and a card number reaches the model redacted,
//! with a note of what was removed; a model that sends a secret in another
//! call's arguments is stopped before the call leaves; the audit trail
//! records both, never the secrets.

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    mcp::v1::{self as mcp, audit_service_client::AuditServiceClient},
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;

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
    let mut audit = AuditServiceClient::connect(w._mcp.url())
        .await
        .expect("connects");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let calls = loop {
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
        if calls.len() >= 2 || std::time::Instant::now() > deadline {
            break calls;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
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
