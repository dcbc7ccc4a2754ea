//! Upstream sessions and stdio processes per organization held across
//! replicas: each session holds a lease of its replica's grant in the
//! shared database (`org_session_grants`, `org_stdio_grants`), so two
//! replicas together keep to the limit, and a dead replica's sessions come
//! back when its grants expire.

use std::time::Duration;

use serde_json::json;
use switchboard_example_mcp_server::{CALL_LOG_ENV, HttpServerOptions, spawn_http};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_server::{Ask, PgSlotGrants, SlotGrants as _};
use switchboard_test_support::{DbKind, workspace_binary};
use tokio::{sync::mpsc, task::JoinHandle};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt as _;

use crate::{
    org_limits::{hanging_integration, hanging_upstream, limits_file},
    support::{Harness, admin, create, http_integration, req, start_with},
};

const PATIENCE: Duration = Duration::from_secs(30);
const QUIET: Duration = Duration::from_millis(1500);
const SESSION_REASON: &str = "ERROR_REASON_SESSION_LIMIT";

/// Calls on sessions of their own scope that hang on their upstream (its
/// connect never answers); the refused ones come back on `done`.
struct HangingSessions {
    tasks: Vec<JoinHandle<()>>,
    tx: mpsc::UnboundedSender<Result<(), Status>>,
    done: mpsc::UnboundedReceiver<Result<(), Status>>,
}

impl HangingSessions {
    fn new() -> Self {
        let (tx, done) = mpsc::unbounded_channel();
        Self {
            tasks: Vec::new(),
            tx,
            done,
        }
    }

    /// A call of the holder of `token` to `id` on the session of `scope`.
    fn start(&mut self, client: &McpServiceClient<Channel>, id: &str, token: &str, scope: &str) {
        let (mut client, tx) = (client.clone(), self.tx.clone());
        let request = req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "echo".to_owned(),
                arguments: json_to_struct(&json!({"text": "x"})),
                session_scope: scope.to_owned(),
                ..Default::default()
            },
            token,
        );
        self.tasks.push(tokio::spawn(async move {
            let _ = tx.send(client.execute_tool(request).await.map(drop));
        }));
    }

    /// Waits for exactly `n` refusals at the session limit naming `limit`,
    /// then checks that no further call comes back.
    async fn expect_refused(&mut self, n: usize, limit: usize) {
        for _ in 0..n {
            let status = tokio::time::timeout(PATIENCE, self.done.recv())
                .await
                .expect("a session past the limit is refused")
                .expect("a result")
                .expect_err("refused");
            assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
            let details = status.get_error_details();
            assert_eq!(
                details.error_info().map(|info| info.reason.as_str()),
                Some(SESSION_REASON),
                "{status:?}"
            );
            let expected = format!("the organization has {limit} open MCP sessions, its limit");
            assert!(status.message().contains(&expected), "{status:?}");
        }
        if let Ok(Some(result)) = tokio::time::timeout(QUIET, self.done.recv()).await {
            panic!("a session within the limit came back: {result:?}");
        }
    }
}

impl Drop for HangingSessions {
    fn drop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}

fn replica_config(config: &mut switchboard_mcp_service::Config, file: &std::path::Path) {
    config.common.server.org_limits_file = Some(file.to_owned());
    config.common.server.org_slot_grant_heartbeat = Duration::from_millis(100);
    config.common.server.org_slot_grant_ttl = Duration::from_secs(2);
    config.connect_timeout = Duration::from_secs(600);
    config.call_timeout = Duration::from_secs(600);
}

#[tokio::test]
async fn an_organization_session_limit_holds_across_two_replicas_and_drains_from_a_dead_one() {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(
        dir.path(),
        "[orgs.org-three]\nsessions = 3\n[orgs.org-dead]\nsessions = 3\n",
    );
    let mut a = start_with(DbKind::Postgres, |c| replica_config(c, &file)).await;
    let (_b_server, b) = a.replica(|c| replica_config(c, &file)).await;
    let (three, other) = (admin("org-three"), admin("org-other"));
    let (url, _upstream) = hanging_upstream().await;
    let three_id = hanging_integration(&mut a, &three, &url).await;
    let other_id = hanging_integration(&mut a, &other, &url).await;

    // Two sessions on each replica, all busy: three in all, one refused
    // (each replica alone would hold its two).
    let mut sessions = HangingSessions::new();
    sessions.start(&a.client, &three_id, &three, "a1");
    sessions.start(&a.client, &three_id, &three, "a2");
    sessions.expect_refused(0, 3).await;
    sessions.start(&b, &three_id, &three, "b1");
    sessions.start(&b, &three_id, &three, "b2");
    sessions.expect_refused(1, 3).await;
    // Another organization keeps the default (200).
    let mut others = HangingSessions::new();
    for scope in ["o1", "o2", "o3", "o4"] {
        others.start(&b, &other_id, &other, scope);
    }
    others.expect_refused(0, 200).await;

    // A replica that died holding two of an organization's three: its
    // grants are no longer renewed, and its sessions come back once they
    // expire.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&a.db.url)
        .await
        .expect("the database");
    let dead = PgSlotGrants::in_table(pool, Duration::from_secs(1), "org_session_grants");
    let ask = |keep| Ask {
        keep,
        want: 1,
        limit: 3,
    };
    assert_eq!(
        dead.acquire("dead", "org-dead", ask(0))
            .await
            .expect("granted"),
        1
    );
    assert_eq!(
        dead.acquire("dead", "org-dead", ask(1))
            .await
            .expect("granted"),
        2
    );
    let token = admin("org-dead");
    let dead_id = hanging_integration(&mut a, &token, &url).await;
    let mut before = HangingSessions::new();
    before.start(&b, &dead_id, &token, "d1");
    before.start(&b, &dead_id, &token, "d2");
    before.expect_refused(1, 3).await;
    let mut after = HangingSessions::new();
    after.start(&b, &dead_id, &token, "d3");
    after.start(&b, &dead_id, &token, "d4");
    after.start(&b, &dead_id, &token, "d5");
    after.expect_refused(1, 3).await;
}

/// A stdio integration of the example server of the holder of `token`,
/// its tool calls logged to `log`.
async fn stdio_integration(
    h: &mut Harness,
    token: &str,
    binary: &str,
    log: &std::path::Path,
) -> String {
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
    create(h, token, request).await.id
}

fn call(
    id: &str,
    tool: &str,
    arguments: serde_json::Value,
    scope: &str,
    token: &str,
) -> tonic::Request<pb::ExecuteToolRequest> {
    req(
        pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: json_to_struct(&arguments),
            session_scope: scope.to_owned(),
            ..Default::default()
        },
        token,
    )
}

#[tokio::test]
async fn an_organization_stdio_limit_holds_across_two_replicas() {
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string();
    let dir = tempfile::tempdir().expect("a directory");
    let log = dir.path().join("calls.log");
    let file = limits_file(dir.path(), "[orgs.org-one]\nstdio_processes = 1\n");
    let allow = format!("{binary} --transport stdio env={CALL_LOG_ENV}");
    let configure = |c: &mut switchboard_mcp_service::Config| {
        replica_config(c, &file);
        c.stdio_allow = allow.clone();
    };
    let mut a = start_with(DbKind::Postgres, configure).await;
    let (_b_server, mut b) = a.replica(configure).await;
    let token = admin("org-one");
    let id = stdio_integration(&mut a, &token, &binary, &log).await;

    // A call on a holds the organization's one process.
    let mut client = a.client.clone();
    let request = call(&id, "sleep", json!({"ms": 3_000}), "busy", &token);
    let held = tokio::spawn(async move { client.execute_tool(request).await });
    let reached = tokio::time::timeout(PATIENCE, async {
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("sleep")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(reached.is_ok(), "the held call reached its process");

    // A second process on b is refused (b alone would start it).
    let status = b
        .execute_tool(call(&id, "echo", json!({"text": "x"}), "other", &token))
        .await
        .expect_err("no second process");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        status
            .get_error_details()
            .error_info()
            .map(|info| info.reason.clone()),
        Some(SESSION_REASON.to_owned())
    );
    assert!(
        status
            .message()
            .contains("the organization runs 1 stdio MCP servers, its limit"),
        "{status:?}"
    );
    held.await.expect("joined").expect("the held call answers");
    // Once idle, a's process makes room for a new scope on a.
    a.client
        .execute_tool(call(&id, "echo", json!({"text": "x"}), "other", &token))
        .await
        .expect("a closes its own idle process for it");
}

#[tokio::test]
async fn a_replica_that_stops_gracefully_gives_its_sessions_back_at_once() {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(dir.path(), "[orgs.org-full]\nsessions = 3\n");
    // Grants that would outlive the test: only the stop gives them back.
    let configure = |c: &mut switchboard_mcp_service::Config| {
        replica_config(c, &file);
        c.common.server.org_slot_grant_ttl = Duration::from_secs(600);
    };
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut a = start_with(DbKind::Postgres, configure).await;
    let (_b_server, mut b) = a.replica(configure).await;
    let token = admin("org-full");
    let id = create(&mut a, &token, http_integration("example", &upstream.url()))
        .await
        .id;

    // a holds all three of the organization's sessions, idle in its pool.
    for scope in ["a1", "a2", "a3"] {
        a.client
            .execute_tool(call(&id, "echo", json!({"text": "x"}), scope, &token))
            .await
            .expect("a session on a");
    }
    let status = b
        .execute_tool(call(&id, "echo", json!({"text": "x"}), "b0", &token))
        .await
        .expect_err("a holds the limit");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");

    let Harness {
        db: _db, server, ..
    } = a;
    server.stop().await.expect("a stops gracefully");

    // b opens as many sessions as the limit at once, long before a's
    // grants would have expired.
    for scope in ["b1", "b2", "b3"] {
        b.execute_tool(call(&id, "echo", json!({"text": "x"}), scope, &token))
            .await
            .expect("a session on b");
    }
}
