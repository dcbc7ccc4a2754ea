//! MCP servers over `https://`: the CA file setting decides which private
//! authorities are trusted, and a server that offers HTTP/2 carries a
//! session's concurrent calls on one connection.

use std::io::Write as _;

use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests};

use crate::support::{Harness, admin, create, http_integration, req, start, start_with};

/// Concurrent calls sent at once on one session.
const CALLERS: usize = 16;

async fn https_upstream() -> RunningHttpServer {
    spawn_http(HttpServerOptions {
        tls: true,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream")
}

fn ca_file(upstream: &RunningHttpServer) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    let pem = upstream
        .certificate_pem
        .as_deref()
        .expect("served over TLS");
    file.write_all(pem.as_bytes()).expect("written");
    file
}

async fn echo(h: &Harness, token: &str, id: &str, text: &str) -> pb::ExecuteToolResponse {
    h.client
        .clone()
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.into(),
                tool_name: "echo".into(),
                arguments_json: format!(r#"{{"text":"{text}"}}"#),
                session_scope: "shared".into(),
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("ExecuteTool answers")
        .into_inner()
}

fn text(response: &pb::ExecuteToolResponse) -> String {
    assert!(!response.is_error, "{response:?}");
    match response.content.first().and_then(|c| c.block.as_ref()) {
        Some(pb::content_block::Block::Text(text)) => text.text.clone(),
        other => panic!("not a text block: {other:?}"),
    }
}

async fn calls_share_one_http2_connection(kind: DbKind) {
    let upstream = https_upstream().await;
    let ca = ca_file(&upstream);
    let mut h = start_with(kind, |config| {
        config.tls_ca_file = Some(ca.path().to_owned());
    })
    .await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("secure", &upstream.url()))
        .await
        .id;
    assert_eq!(text(&echo(&h, &token, &id, "first").await), "first");
    let connections = upstream.stats.connections();
    let http2_before = upstream.stats.http2_requests();

    let calls = (0..CALLERS).map(|n| {
        let (h, token, id) = (&h, &token, &id);
        async move { text(&echo(h, token, id, &format!("call {n}")).await) }
    });
    let answers = futures::future::join_all(calls).await;

    let expected: Vec<String> = (0..CALLERS).map(|n| format!("call {n}")).collect();
    assert_eq!(answers, expected);
    assert!(
        upstream.stats.http2_requests() - http2_before >= CALLERS as u64,
        "the calls went over HTTP/2"
    );
    assert_eq!(
        upstream.stats.connections(),
        connections,
        "{CALLERS} calls at once opened no new connection"
    );
}

async fn a_server_signed_by_an_untrusted_authority_is_not_reached(kind: DbKind) {
    let upstream = https_upstream().await;
    let mut h = start(kind).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("secure", &upstream.url()))
        .await
        .id;
    let refused = echo(&h, &token, &id, "hello").await;
    assert!(refused.is_error, "{refused:?}");
    assert_eq!(
        refused.failure_reason(),
        pb::ToolFailureReason::ServerUnreachable,
        "{refused:?}"
    );
    assert_eq!(upstream.stats.snapshot().tool_calls, 0);
}

db_tests!(
    calls_share_one_http2_connection,
    a_server_signed_by_an_untrusted_authority_is_not_reached,
);
