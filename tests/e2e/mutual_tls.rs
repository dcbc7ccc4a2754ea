//! Both services over TLS, mcp-service requiring client certificates:
//! runs-service calls it with its own certificate, whose SPIFFE ID is the
//! calling service of the tool calls in mcp-service's audit trail, and a
//! certificate rotated on disk is the one its next connections present.

use std::time::{Duration, Instant};

use switchboard_proto::{
    mcp::v1::{self as mcp, audit_service_client::AuditServiceClient},
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;
use tonic::transport::Channel;

use crate::world::{Options, RUNS_SPIFFE_ID, TEST_SPIFFE_ID, World, final_run, world};

/// Runs the model's script in the rotation test has turns for.
const ROUNDS: usize = 40;

/// The SPIFFE ID of the certificate runs-service's is rotated to.
const ROTATED_SPIFFE_ID: &str = "spiffe://cluster.local/ns/switchboard/sa/runs-service-next";

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

    let events = audit_events(&w).await;
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

#[tokio::test]
async fn a_rotated_client_certificate_is_presented_on_new_connections_without_a_restart() {
    let echo = |index: usize| {
        [
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                format!("c{index}"),
                "example__echo",
                format!(r#"{{"text":"call {index}"}}"#),
            )]),
            Turn::Text("done".into()),
        ]
    };
    let mut w = world(Options {
        turns: (0..ROUNDS).flat_map(echo).collect(),
        mutual_tls: true,
        ..Options::default()
    })
    .await;
    echo_once(&mut w).await;
    assert_eq!(calling_services(&w).await, [RUNS_SPIFFE_ID]);

    // A broken file is not used: calls go on with the old certificate.
    let files = w
        .runs_client_certificate
        .clone()
        .expect("a world over mutual TLS");
    std::fs::write(&files.cert_file, "not a certificate").expect("written");
    tokio::time::sleep(Duration::from_millis(1500)).await; // a lookup or more
    echo_once(&mut w).await;
    assert_eq!(calling_services(&w).await.last(), Some(&RUNS_SPIFFE_ID));

    // The certificate rotated the way a SPIFFE agent or cert-manager does:
    // the key and certificate files written over in place.
    let pki = w.pki.as_ref().expect("a world over mutual TLS");
    pki.client("rotated", Some(ROTATED_SPIFFE_ID), "runs-service")
        .write_over(&files);
    let start = Instant::now();
    loop {
        echo_once(&mut w).await;
        if calling_services(&w).await.last() == Some(&ROTATED_SPIFFE_ID) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the rotated certificate was not presented: {:?}",
            calling_services(&w).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Once presented, it stays: no call goes back to the old connections.
    echo_once(&mut w).await;
    assert_eq!(calling_services(&w).await.last(), Some(&ROTATED_SPIFFE_ID));
}

/// One run of one tool call (the model's script has [`ROUNDS`] of them).
async fn echo_once(w: &mut World) {
    let events = w.say("Echo something").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
}

/// mcp-service's audit events, listed with the test's own certificate.
async fn audit_events(w: &World) -> Vec<mcp::AuditEvent> {
    let pki = w.pki.as_ref().expect("a world over mutual TLS");
    let admin = pki.client("auditor", Some(TEST_SPIFFE_ID), "auditor");
    let channel = Channel::from_shared(w._mcp.url())
        .expect("a URL")
        .tls_config(pki.client_tls(Some(&admin)))
        .expect("a TLS configuration")
        .connect()
        .await
        .expect("connects");
    let request = mcp::ListAuditEventsRequest {
        page_size: 1000,
        ..Default::default()
    };
    AuditServiceClient::new(channel)
        .list_audit_events(authed(request, &w.token))
        .await
        .expect("listed")
        .into_inner()
        .events
}

/// The calling service of each tool call in the audit trail, oldest first.
async fn calling_services(w: &World) -> Vec<&'static str> {
    let mut calls: Vec<_> = audit_events(w)
        .await
        .into_iter()
        .filter(|e| e.action() == mcp::AuditAction::ToolCall)
        .collect();
    calls.sort_by_key(|e| e.sequence);
    calls
        .iter()
        .map(|e| match e.service.as_str() {
            RUNS_SPIFFE_ID => RUNS_SPIFFE_ID,
            ROTATED_SPIFFE_ID => ROTATED_SPIFFE_ID,
            other => panic!("a tool call from an unknown service: {other}"),
        })
        .collect()
}
