//! Both services over TLS, mcp-service requiring client certificates:
//! runs-service calls it with its own certificate, whose SPIFFE ID is the
//! calling service of the tool calls in mcp-service's audit trail.

use switchboard_proto::{
    mcp::v1::{self as mcp, audit_service_client::AuditServiceClient},
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;
use tonic::transport::Channel;

use crate::world::{Options, RUNS_SPIFFE_ID, TEST_SPIFFE_ID, final_run, world};

#[tokio::test]
async fn runs_service_calls_mcp_service_over_mutual_tls_as_its_spiffe_id() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__echo",
                r#"{"text":"over mTLS"}"#,
            )]),
            Turn::FromToolResults("The tool said: {last_tool_result}".into()),
        ],
        mutual_tls: true,
        ..Options::default()
    })
    .await;
    let events = w.say("Echo something").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);

    let pki = w.pki.as_ref().expect("a world over mutual TLS");
    let mcp_url = w._mcp.url();
    let admin = pki.client("auditor", Some(TEST_SPIFFE_ID), "auditor");
    let channel = Channel::from_shared(mcp_url)
        .expect("a URL")
        .tls_config(pki.client_tls(Some(&admin)))
        .expect("a TLS configuration")
        .connect()
        .await
        .expect("connects");
    let events = AuditServiceClient::new(channel)
        .list_audit_events(authed(mcp::ListAuditEventsRequest::default(), &w.token))
        .await
        .expect("listed")
        .into_inner()
        .events;
    let call = events
        .iter()
        .find(|e| e.action() == mcp::AuditAction::ToolCall && e.target == "echo")
        .expect("the run's tool call is audited");
    assert_eq!(call.service, RUNS_SPIFFE_ID, "{call:?}");
    // The integration was created by the test's own certificate.
    let created = events
        .iter()
        .find(|e| e.integration_id == w.integration_id && e.action() != mcp::AuditAction::ToolCall)
        .expect("the integration's creation is audited");
    assert_eq!(created.service, TEST_SPIFFE_ID, "{created:?}");
}
