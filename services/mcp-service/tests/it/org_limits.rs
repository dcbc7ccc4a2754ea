//! Limits per organization set by a platform operator in the limits file
//! (`SWITCHBOARD_ORG_LIMITS_FILE`): an organization's own limit is held, the
//! others keep the defaults.

use std::{path::Path, time::Duration};

use serde_json::json;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{DbKind, db_tests};
use tokio::{net::TcpListener, sync::mpsc, task::JoinHandle};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt as _;

use crate::support::{Harness, admin, create, http_integration, req, start_with};

/// A generous bound on waits for something that happens promptly.
const PATIENCE: Duration = Duration::from_secs(30);
/// How long a call that would be refused has to show up as refused.
const QUIET: Duration = Duration::from_millis(1500);
/// How long a call past its organization's limit waits here before it is
/// refused (`tests/it/org_queue.rs` tests the wait itself).
const QUEUE_WAIT: Duration = Duration::from_millis(300);
const CONCURRENCY_REASON: &str = "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT";

/// An "MCP server" that accepts connections and never answers a byte.
pub async fn hanging_upstream() -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("bound"));
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (url, task)
}

/// Writes `text` as the limits file in `dir`.
pub fn limits_file(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("limits.toml");
    std::fs::write(&path, text).expect("written");
    path
}

/// Calls that hang on the hanging upstream until aborted; the refused ones
/// come back on `done` when their wait for a slot is over.
pub struct HangingCalls {
    tasks: Vec<JoinHandle<()>>,
    tx: mpsc::UnboundedSender<Result<(), Status>>,
    done: mpsc::UnboundedReceiver<Result<(), Status>>,
}

impl HangingCalls {
    pub fn new() -> Self {
        let (tx, done) = mpsc::unbounded_channel();
        Self {
            tasks: Vec::new(),
            tx,
            done,
        }
    }

    /// Starts `n` calls of the holder of `token` to integration `id`.
    pub fn start(&mut self, client: &McpServiceClient<Channel>, id: &str, token: &str, n: usize) {
        for _ in 0..n {
            let (mut client, tx) = (client.clone(), self.tx.clone());
            let request = req(
                pb::ExecuteToolRequest {
                    integration_id: id.to_owned(),
                    tool_name: "echo".to_owned(),
                    arguments: json_to_struct(&json!({"text": "x"})),
                    session_scope: "thread".into(),
                    ..Default::default()
                },
                token,
            );
            self.tasks.push(tokio::spawn(async move {
                let _ = tx.send(client.execute_tool(request).await.map(drop));
            }));
        }
    }

    /// Waits for exactly `n` refusals at the concurrency limit, then checks
    /// that no further call comes back.
    pub async fn expect_refused(&mut self, n: usize) {
        for _ in 0..n {
            let status = tokio::time::timeout(PATIENCE, self.done.recv())
                .await
                .expect("calls past the limit are refused after their wait")
                .expect("a result")
                .expect_err("refused");
            assert_refused_at_limit(&status);
        }
        if let Ok(Some(result)) = tokio::time::timeout(QUIET, self.done.recv()).await {
            panic!("a call within the limit came back: {result:?}");
        }
    }

    /// Ends every call (the client resets its stream).
    pub fn end(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}

impl Drop for HangingCalls {
    fn drop(&mut self) {
        self.end();
    }
}

/// Asserts `status` is the refusal at an organization's concurrency limit.
pub fn assert_refused_at_limit(status: &Status) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status.get_error_details();
    assert_eq!(
        details.error_info().expect("an ErrorInfo detail").reason,
        CONCURRENCY_REASON,
        "{status:?}"
    );
    assert!(details.retry_info().is_some(), "{status:?}");
}

/// Creates an integration of the holder of `token` on the hanging upstream.
pub async fn hanging_integration(h: &mut Harness, token: &str, url: &str) -> String {
    create(h, token, http_integration("stuck", url)).await.id
}

async fn an_organization_with_its_own_concurrency_limit_is_held_to_it(kind: DbKind) {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(dir.path(), "[orgs.org-small]\nconcurrency = 2\n");
    let mut h = start_with(kind, |c| {
        c.common.server.org_limits_file = Some(file);
        c.common.server.org_queue_wait = QUEUE_WAIT;
        c.connect_timeout = Duration::from_secs(600);
        c.call_timeout = Duration::from_secs(600);
    })
    .await;
    let (small, other) = (admin("org-small"), admin("org-other"));
    let (url, _upstream) = hanging_upstream().await;
    let small_id = hanging_integration(&mut h, &small, &url).await;
    let other_id = hanging_integration(&mut h, &other, &url).await;

    // The default limit (256) would admit all three.
    let mut calls = HangingCalls::new();
    calls.start(&h.client, &small_id, &small, 3);
    calls.expect_refused(1).await;

    // Another organization keeps the default: three calls stay in flight
    // and a fourth is served too.
    let mut others = HangingCalls::new();
    others.start(&h.client, &other_id, &other, 3);
    others.expect_refused(0).await;
    h.client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &other))
        .await
        .expect("the other organization is served");
    let status = h
        .client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &small))
        .await
        .expect_err("the small organization is at its limit");
    assert_refused_at_limit(&status);
}

async fn a_limits_file_with_an_unknown_key_stops_the_service_at_start(kind: DbKind) {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(dir.path(), "[orgs.a]\nconcurency = 2\n");
    let db = switchboard_test_support::TestDb::new(kind)
        .await
        .expect("a test database");
    let mut config = switchboard_mcp_service::Config::for_tests(
        &db.url,
        switchboard_test_support::TEST_JWT_SECRET,
    );
    config.common.server.org_limits_file = Some(file);
    // The limits are built with the service, before it listens: one
    // limiter for the gRPC server and the MCP endpoint.
    let error = switchboard_mcp_service::spawn(config)
        .await
        .expect_err("the service refuses to start");
    let shown = format!("{error:#}");
    assert!(shown.contains("SWITCHBOARD_ORG_LIMITS_FILE"), "{shown}");
    assert!(shown.contains("concurency"), "{shown}");
}

/// Settings of both replicas: the limits file, grants renewed and shrunk
/// often, calls that hang as long as the test needs.
fn replica_config(config: &mut switchboard_mcp_service::Config, file: &Path) {
    config.common.server.org_limits_file = Some(file.to_owned());
    config.common.server.org_slot_grant_heartbeat = Duration::from_millis(100);
    config.common.server.org_slot_grant_ttl = Duration::from_secs(3);
    config.common.server.org_queue_wait = QUEUE_WAIT;
    config.connect_timeout = Duration::from_secs(600);
    config.call_timeout = Duration::from_secs(600);
}

/// The slots of `org` granted to any replica, read from the shared table.
async fn granted(url: &str, org: &str) -> i64 {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.expect("the database");
    let row = sqlx::query(
        "SELECT COALESCE(SUM(slots), 0)::BIGINT FROM org_slot_grants WHERE org_id = $1",
    )
    .bind(org)
    .fetch_one(&pool)
    .await
    .expect("the grants");
    pool.close().await;
    sqlx::Row::get(&row, 0)
}

#[tokio::test]
async fn an_organization_limit_holds_across_two_replicas_on_one_postgresql() {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(
        dir.path(),
        "[orgs.org-ten]\nconcurrency = 10\n[orgs.org-three]\nconcurrency = 3\n",
    );
    let mut a = start_with(DbKind::Postgres, |c| replica_config(c, &file)).await;
    let (_b_server, b) = a.replica(|c| replica_config(c, &file)).await;
    let (ten, three) = (admin("org-ten"), admin("org-three"));
    let (url, _upstream) = hanging_upstream().await;
    let ten_id = hanging_integration(&mut a, &ten, &url).await;
    let three_id = hanging_integration(&mut a, &three, &url).await;

    // Six calls on each replica: ten are admitted in all, two refused.
    let mut calls = HangingCalls::new();
    calls.start(&a.client, &ten_id, &ten, 6);
    calls.start(&b, &ten_id, &ten, 6);
    calls.expect_refused(2).await;
    assert_eq!(granted(&a.db.url, "org-ten").await, 10);
    // The eleventh is refused on either replica.
    for mut client in [a.client.clone(), b.clone()] {
        let status = client
            .list_integrations(req(pb::ListIntegrationsRequest::default(), &ten))
            .await
            .expect_err("the organization is at its limit");
        assert_refused_at_limit(&status);
    }
    // Another organization's own limit holds beside it.
    let mut others = HangingCalls::new();
    others.start(&b, &three_id, &three, 2);
    others.start(&a.client, &three_id, &three, 2);
    others.expect_refused(1).await;

    // The calls end; their slots come back, and one replica may take all ten.
    calls.end();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while granted(&a.db.url, "org-ten").await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the grants were not given back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut again = HangingCalls::new();
    again.start(&b, &ten_id, &ten, 11);
    again.expect_refused(1).await;
    assert_eq!(granted(&a.db.url, "org-ten").await, 10);
}

db_tests!(
    an_organization_with_its_own_concurrency_limit_is_held_to_it,
    a_limits_file_with_an_unknown_key_stops_the_service_at_start,
);
