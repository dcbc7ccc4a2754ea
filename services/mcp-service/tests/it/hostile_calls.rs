//! Hostile MCP servers and callers on the way to upstream servers: results
//! too large, connections dropped mid-call, endless discovery, other users'
//! session scopes, floods of scopes. Each test fails on a gateway that
//! retries delivered calls, follows cursors forever or trusts scopes.

use std::time::Duration;

use serde_json::json;
use switchboard_example_mcp_server::{
    CALL_LOG_ENV, DROP_CONNECTION_TOOL, HttpServerOptions, RunningHttpServer, spawn_http,
};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, content_block::Block},
};
use switchboard_test_support::{DbKind, db_tests, token, workspace_binary};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::support::{Harness, admin, create, http_integration, req, start_with, validate};

const MIB: usize = 1024 * 1024;

async fn upstream(options: HttpServerOptions) -> RunningHttpServer {
    spawn_http(options).await.expect("upstream")
}

async fn integration(h: &mut Harness, org: &str, url: &str) -> String {
    create(h, &admin(org), http_integration("example", url))
        .await
        .id
}

async fn execute(
    h: &mut Harness,
    token: &str,
    id: &str,
    tool: &str,
    arguments: serde_json::Value,
    scope: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: tool.into(),
                arguments: json_to_struct(&arguments),
                session_scope: scope.into(),
                arguments_json: String::new(),
                ..Default::default()
            },
            token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

fn text(response: &pb::ExecuteToolResponse) -> String {
    match response.content.first().and_then(|b| b.block.as_ref()) {
        Some(Block::Text(t)) => t.text.clone(),
        other => panic!("a text block, not {other:?} ({})", response.error_message),
    }
}

/// The value the example server's per-session `counter` tool returns next.
async fn count(h: &mut Harness, token: &str, id: &str, scope: &str) -> String {
    let response = execute(h, token, id, "counter", json!({}), scope)
        .await
        .expect("answered");
    assert!(!response.is_error, "{}", response.error_message);
    text(&response)
}

fn tool_calls(server: &RunningHttpServer) -> u64 {
    server.stats.snapshot().tool_calls
}

async fn an_oversized_result_runs_the_tool_once_says_so_and_keeps_the_session(kind: DbKind) {
    let server = upstream(HttpServerOptions::default()).await;
    let mut h = start_with(kind, |_| {}).await;
    let id = integration(&mut h, "org-a", &server.url()).await;
    let token = admin("org-a");
    assert_eq!(count(&mut h, &token, &id, "t").await, "1");
    // Just over the result cap, and over the transport's bound too (twice
    // the cap): the second is cut off while it streams in.
    for bytes in [5 * MIB, 9 * MIB] {
        let before = tool_calls(&server);
        let response = execute(&mut h, &token, &id, "big", json!({ "bytes": bytes }), "t")
            .await
            .expect("answered");
        assert!(response.is_error);
        assert!(
            response.error_message.contains("larger than 4 MiB"),
            "{bytes}: {}",
            response.error_message
        );
        assert_eq!(
            tool_calls(&server),
            before + 1,
            "{bytes}: the tool ran once"
        );
    }
    assert_eq!(
        count(&mut h, &token, &id, "t").await,
        "2",
        "the session outlived the oversized results"
    );
    assert_eq!(server.stats.snapshot().sessions, 1);
}

async fn a_connection_dropped_after_the_request_arrived_is_not_retried(kind: DbKind) {
    // A server that cannot resume the response stream: the answer is lost.
    let server = upstream(HttpServerOptions {
        resumable: false,
        ..HttpServerOptions::default()
    })
    .await;
    let mut h = start_with(kind, |_| {}).await;
    let id = integration(&mut h, "org-a", &server.url()).await;
    let token = admin("org-a");
    let response = execute(&mut h, &token, &id, DROP_CONNECTION_TOOL, json!({}), "t")
        .await
        .expect("answered");
    assert!(response.is_error);
    assert!(
        response.error_message.contains("was not repeated"),
        "{}",
        response.error_message
    );
    assert_eq!(tool_calls(&server), 1, "the tool ran exactly once");
    let echoed = execute(&mut h, &token, &id, "echo", json!({"text": "on"}), "t")
        .await
        .expect("answered");
    assert_eq!(text(&echoed), "on", "later calls still work");
}

async fn discover(
    h: &mut Harness,
    org: &str,
    id: &str,
) -> Result<pb::DiscoverResponse, tonic::Status> {
    h.client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.to_owned(),
                bypass_cache: true,
                allowed_tools: None,
            },
            &admin(org),
        ))
        .await
        .map(tonic::Response::into_inner)
}

async fn endless_pagination_stops_at_the_page_limit(kind: DbKind) {
    let server = upstream(HttpServerOptions {
        endless_tool_pages: true,
        ..HttpServerOptions::default()
    })
    .await;
    let mut h = start_with(kind, |config| config.discovery_max_pages = 20).await;
    let id = integration(&mut h, "org-a", &server.url()).await;
    let status = discover(&mut h, "org-a", &id)
        .await
        .expect_err("endless pages are refused");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("more than 20 pages"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn discovery_stops_at_the_item_and_byte_limits() {
    let server = upstream(HttpServerOptions::default()).await;
    let mut h = start_with(DbKind::Sqlite, |config| config.discovery_max_items = 12).await;
    let id = integration(&mut h, "org-a", &server.url()).await;
    let status = discover(&mut h, "org-a", &id)
        .await
        .expect_err("15 items are more than 12");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        status
            .get_error_details()
            .error_info()
            .map(|info| info.reason.clone())
            .as_deref(),
        Some("ERROR_REASON_MCP_RESULT_TOO_LARGE")
    );
    assert!(
        status.message().contains("more than 12 items"),
        "{}",
        status.message()
    );

    let mut h = start_with(DbKind::Sqlite, |config| config.discovery_max_bytes = 2048).await;
    let id = integration(&mut h, "org-a", &server.url()).await;
    let status = discover(&mut h, "org-a", &id)
        .await
        .expect_err("the listings are larger than 2 KiB");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("larger than 2 KiB"),
        "{}",
        status.message()
    );
}

async fn another_users_thread_id_gets_a_session_of_its_own(kind: DbKind) {
    let server = upstream(HttpServerOptions::default()).await;
    let mut h = start_with(kind, |_| {}).await;
    let id = integration(&mut h, "org-a", &server.url()).await;
    let alice = token("org-a", "alice", &["member"]);
    let mallory = token("org-a", "mallory", &["member"]);
    assert_eq!(count(&mut h, &alice, &id, "thread-1").await, "1");
    assert_eq!(count(&mut h, &alice, &id, "thread-1").await, "2");
    assert_eq!(
        count(&mut h, &mallory, &id, "thread-1").await,
        "1",
        "alice's thread id gives mallory a session of her own"
    );
    assert_eq!(count(&mut h, &alice, &id, "thread-1").await, "3");
}

/// Starts a call that holds its session for `ms`, and waits until the
/// server has it.
async fn hold_session(
    h: &Harness,
    server: &RunningHttpServer,
    token: &str,
    id: &str,
    scope: &str,
) -> tokio::task::JoinHandle<()> {
    let before = tool_calls(server);
    let mut client = h.client.clone();
    let request = req(
        pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: "sleep".into(),
            arguments: json_to_struct(&json!({ "ms": 3_000 })),
            session_scope: scope.into(),
            arguments_json: String::new(),
            ..Default::default()
        },
        token,
    );
    let call = tokio::spawn(async move {
        let _ = client.execute_tool(request).await;
    });
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        while tool_calls(server) == before {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the held call reached the server");
    call
}

#[tokio::test]
async fn an_organization_at_its_session_limit_closes_its_own_idle_sessions_only() {
    let server = upstream(HttpServerOptions::default()).await;
    let mut h = start_with(DbKind::Sqlite, |config| {
        config.max_sessions_per_org = 2;
        config.max_sessions = 3;
    })
    .await;
    let a = integration(&mut h, "org-a", &server.url()).await;
    let b = integration(&mut h, "org-b", &server.url()).await;
    let (token_a, token_b) = (admin("org-a"), admin("org-b"));
    assert_eq!(count(&mut h, &token_b, &b, "b1").await, "1");
    // Org A floods scopes: past its limit it closes its own sessions.
    for scope in ["a1", "a2", "a3", "a4", "a5"] {
        assert_eq!(count(&mut h, &token_a, &a, scope).await, "1");
    }
    assert_eq!(
        count(&mut h, &token_b, &b, "b1").await,
        "2",
        "org B's session survived org A's flood"
    );
    // A third organization fills the pool: the largest one gives way.
    let c = integration(&mut h, "org-c", &server.url()).await;
    assert_eq!(count(&mut h, &admin("org-c"), &c, "c1").await, "1");
    assert_eq!(count(&mut h, &token_b, &b, "b1").await, "3");
}

#[tokio::test]
async fn an_organization_whose_sessions_are_all_busy_is_refused_with_a_retry_hint() {
    let server = upstream(HttpServerOptions::default()).await;
    let mut h = start_with(DbKind::Sqlite, |config| config.max_sessions_per_org = 2).await;
    let a = integration(&mut h, "org-a", &server.url()).await;
    let b = integration(&mut h, "org-b", &server.url()).await;
    let token_a = admin("org-a");
    let held = [
        hold_session(&h, &server, &token_a, &a, "a1").await,
        hold_session(&h, &server, &token_a, &a, "a2").await,
    ];
    let status = execute(&mut h, &token_a, &a, "echo", json!({"text": "x"}), "a3")
        .await
        .expect_err("no room for a third session");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status.get_error_details();
    assert_eq!(
        details.error_info().map(|info| info.reason.as_str()),
        Some("ERROR_REASON_SESSION_LIMIT")
    );
    assert!(
        details.retry_info().is_some(),
        "a session frees up by itself"
    );
    assert!(
        status.message().contains("retry in"),
        "{}",
        status.message()
    );
    let retry = status
        .get_error_details()
        .retry_info()
        .map(|r| r.retry_delay);
    assert_eq!(
        retry,
        Some(Some(Duration::from_secs(1))),
        "a RetryInfo detail"
    );
    let report = validate(&mut h, &token_a, &a).await;
    assert!(!report.ok, "validation counts against the same limit");
    assert!(report.error.contains("limit"), "{}", report.error);
    // Another organization is not affected.
    assert_eq!(count(&mut h, &admin("org-b"), &b, "b1").await, "1");
    for call in held {
        call.await.expect("the held call ends");
    }
    assert_eq!(count(&mut h, &token_a, &a, "a3").await, "1");
}

db_tests!(
    an_oversized_result_runs_the_tool_once_says_so_and_keeps_the_session,
    a_connection_dropped_after_the_request_arrived_is_not_retried,
    endless_pagination_stops_at_the_page_limit,
    another_users_thread_id_gets_a_session_of_its_own,
);

/// The allow-list entry permitting [`stdio_integration`]'s command line.
fn stdio_allow_entry(binary: &str) -> String {
    format!("{binary} --transport stdio env={CALL_LOG_ENV}")
}

/// A stdio integration of the example server whose tool calls are logged to
/// `log`.
async fn stdio_integration(h: &mut Harness, binary: &str, log: &std::path::Path) -> String {
    let mut request = http_integration("local", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: binary.to_owned(),
                    args: vec!["--transport".into(), "stdio".into()],
                    env: [(CALL_LOG_ENV.to_owned(), log.display().to_string())].into(),
                    secret_env: Default::default(),
                    secret_env_names: vec![],
                })),
            }),
            auth: None,
        },
    ));
    create(h, &admin("org-a"), request).await.id
}

#[tokio::test]
async fn a_stdio_server_dying_after_the_request_arrived_is_not_retried() {
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string();
    let allowed = stdio_allow_entry(&binary);
    let mut h = start_with(DbKind::Sqlite, move |config| config.stdio_allow = allowed).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("calls.log");
    let id = stdio_integration(&mut h, &binary, &log).await;
    let token = admin("org-a");
    let response = execute(&mut h, &token, &id, DROP_CONNECTION_TOOL, json!({}), "t")
        .await
        .expect("answered");
    assert!(response.is_error);
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("the log: {e}; the response: {response:?}"));
    assert_eq!(
        calls.lines().count(),
        1,
        "the tool ran exactly once: {calls}"
    );
    // The next call starts a new server.
    let echoed = execute(&mut h, &token, &id, "echo", json!({"text": "again"}), "t")
        .await
        .expect("answered");
    assert_eq!(text(&echoed), "again", "{}", echoed.error_message);
}

#[tokio::test]
async fn an_oversized_stdio_result_runs_the_tool_once_and_says_so() {
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string();
    let allowed = stdio_allow_entry(&binary);
    let mut h = start_with(DbKind::Sqlite, move |config| config.stdio_allow = allowed).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("calls.log");
    let id = stdio_integration(&mut h, &binary, &log).await;
    let token = admin("org-a");
    assert_eq!(count(&mut h, &token, &id, "t").await, "1");
    // Over the result cap, and over the line bound (twice the cap) too.
    for bytes in [5 * MIB, 9 * MIB] {
        let response = execute(&mut h, &token, &id, "big", json!({ "bytes": bytes }), "t")
            .await
            .expect("answered");
        assert!(
            response.error_message.contains("larger than 4 MiB"),
            "{bytes}: {}",
            response.error_message
        );
    }
    assert_eq!(
        count(&mut h, &token, &id, "t").await,
        "2",
        "one session throughout"
    );
    let calls = std::fs::read_to_string(&log).expect("the log");
    assert_eq!(calls, "counter\nbig\nbig\ncounter\n", "each tool ran once");
}

#[tokio::test]
async fn an_organizations_stdio_servers_are_capped_and_validation_counts() {
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string();
    let allowed = stdio_allow_entry(&binary);
    let mut h = start_with(DbKind::Sqlite, move |config| {
        config.stdio_allow = allowed;
        config.max_stdio_sessions_per_org = 1;
    })
    .await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("calls.log");
    let id = stdio_integration(&mut h, &binary, &log).await;
    let token = admin("org-a");
    // One process at a time: a new scope replaces the idle one.
    assert_eq!(count(&mut h, &token, &id, "s1").await, "1");
    assert_eq!(count(&mut h, &token, &id, "s2").await, "1");
    assert_eq!(
        count(&mut h, &token, &id, "s1").await,
        "1",
        "s1's process was closed"
    );

    let mut client = h.client.clone();
    let request = req(
        pb::ExecuteToolRequest {
            integration_id: id.clone(),
            tool_name: "sleep".into(),
            arguments: json_to_struct(&json!({ "ms": 3_000 })),
            session_scope: "busy".into(),
            arguments_json: String::new(),
            ..Default::default()
        },
        &token,
    );
    let held = tokio::spawn(async move { client.execute_tool(request).await });
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("sleep")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the held call reached the server");
    let status = execute(&mut h, &token, &id, "echo", json!({"text": "x"}), "other")
        .await
        .expect_err("no second process");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("stdio MCP servers"),
        "{}",
        status.message()
    );
    let report = validate(&mut h, &token, &id).await;
    assert!(!report.ok, "validation starts no process past the limit");
    assert!(report.error.contains("retry in"), "{}", report.error);
    let answered = held.await.expect("the held call ends").expect("answered");
    assert!(!answered.into_inner().is_error);
}
