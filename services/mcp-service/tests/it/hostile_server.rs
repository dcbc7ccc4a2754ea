//! Hostile use of the shared server stack: one organization's hanging
//! upstream or bursts must not starve another, long tool calls are not cut
//! by the server's default deadline, `--help` shows no secret, and readiness
//! follows the database.

use std::{num::NonZeroU32, time::Duration};

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    MCP_SERVICE_NAME,
    json::json_to_struct,
    mcp::v1::{self as pb, content_block::Block},
};
use switchboard_test_support::{
    DbKind, db_tests,
    grpc::{health_status, wait_serving},
};
use tokio::net::TcpListener;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_types::StatusExt as _;

use crate::support::{Harness, admin, create, http_integration, req, start_with};

/// A generous bound on waits for something that happens promptly.
const PATIENCE: Duration = Duration::from_secs(30);

/// An "MCP server" that accepts connections and never answers a byte.
async fn hanging_upstream() -> (String, tokio::task::JoinHandle<()>) {
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

/// An ExecuteTool call of `tool` of integration `id` in one session scope.
pub fn execute(
    id: &str,
    tool: &str,
    arguments: serde_json::Value,
    token: &str,
) -> tonic::Request<pb::ExecuteToolRequest> {
    req(
        pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: json_to_struct(&arguments),
            session_scope: "thread".into(),
            arguments_json: String::new(),
            ..Default::default()
        },
        token,
    )
}

fn texts(response: &pb::ExecuteToolResponse) -> Vec<String> {
    response
        .content
        .iter()
        .filter_map(|b| match &b.block {
            Some(Block::Text(t)) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

/// Asserts `status` is RESOURCE_EXHAUSTED with `reason` and a retry delay.
fn assert_refused_at_limit(status: &Status, reason: &str) -> Duration {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status.get_error_details();
    assert_eq!(
        details.error_info().expect("an ErrorInfo detail").reason,
        reason,
        "{status:?}"
    );
    details
        .retry_info()
        .expect("a RetryInfo detail")
        .retry_delay
        .expect("a retry delay")
}

async fn list(h: &Harness, token: &str) -> Result<(), Status> {
    h.client
        .clone()
        .list_integrations(req(pb::ListIntegrationsRequest::default(), token))
        .await
        .map(drop)
}

async fn an_organization_at_its_concurrency_limit_leaves_others_served(kind: DbKind) {
    const GLOBAL: usize = 4;
    let mut h = start_with(kind, |c| {
        c.common.server.concurrency_limit = GLOBAL;
        c.common.server.org_concurrency_limit = 2;
        // Calls past the limit wait this long for a slot, then are refused.
        c.common.server.org_queue_wait = Duration::from_millis(300);
        // The hanging calls hang until the server stops.
        c.connect_timeout = Duration::from_secs(600);
        c.call_timeout = Duration::from_secs(600);
    })
    .await;
    let (noisy, a) = (admin("org-noisy"), admin("org-quiet"));
    let (hanging_url, hanging) = hanging_upstream().await;
    let hanging_id = create(&mut h, &noisy, http_integration("stuck", &hanging_url))
        .await
        .id;
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let quiet_id = create(&mut h, &a, http_integration("example", &upstream.url()))
        .await
        .id;

    // As many hanging calls as the whole server admits: without a limit per
    // organization they would take every slot.
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..GLOBAL {
        let (mut client, done_tx) = (h.client.clone(), done_tx.clone());
        let request = execute(&hanging_id, "echo", json!({"text": "x"}), &noisy);
        tokio::spawn(async move {
            let _ = done_tx.send(client.execute_tool(request).await.map(drop));
        });
    }
    for _ in 0..GLOBAL - 2 {
        let refused = tokio::time::timeout(PATIENCE, done_rx.recv())
            .await
            .expect("calls beyond the organization's limit are refused after their wait")
            .expect("a result");
        let status = refused.expect_err("refused");
        let delay = assert_refused_at_limit(&status, "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT");
        assert!(delay > Duration::ZERO);
    }
    let status = list(&h, &noisy)
        .await
        .expect_err("the noisy organization is at its limit");
    assert_refused_at_limit(&status, "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT");

    // The quiet organization is served, more than once, and health answers.
    for i in 0..3 {
        let response = h
            .client
            .execute_tool(execute(
                &quiet_id,
                "echo",
                json!({"text": format!("hi {i}")}),
                &a,
            ))
            .await
            .expect("the quiet organization is served")
            .into_inner();
        assert_eq!(texts(&response), [format!("hi {i}")]);
    }
    list(&h, &a).await.expect("listing is served too");
    assert_eq!(
        health_status(&h.server.url(), MCP_SERVICE_NAME)
            .await
            .expect("health answers"),
        ServingStatus::Serving
    );
    assert!(done_rx.try_recv().is_err(), "the admitted calls still hang");
    hanging.abort();
}

async fn an_organization_over_its_rate_is_refused_with_a_retry_delay_and_others_are_not(
    kind: DbKind,
) {
    let h = start_with(kind, |c| {
        c.common.server.org_rate_limit = NonZeroU32::MIN;
        c.common.server.org_rate_burst = NonZeroU32::new(2).expect("2");
    })
    .await;
    let (noisy, quiet) = (admin("org-noisy"), admin("org-quiet"));
    // Ten at once against a bucket of two refilled once a second.
    let results = futures::future::join_all((0..10).map(|_| list(&h, &noisy))).await;
    let refused: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(!refused.is_empty(), "some of the burst is refused");
    for status in refused {
        let delay = assert_refused_at_limit(status, "ERROR_REASON_ORGANIZATION_RATE_LIMIT");
        assert!(
            delay > Duration::ZERO && delay <= Duration::from_secs(1),
            "{delay:?}"
        );
    }
    list(&h, &quiet)
        .await
        .expect("another organization has its own bucket");
    assert_eq!(
        health_status(&h.server.url(), MCP_SERVICE_NAME)
            .await
            .expect("health is not rate limited"),
        ServingStatus::Serving
    );
}

async fn a_tool_call_longer_than_the_default_request_timeout_finishes(kind: DbKind) {
    let mut h = start_with(kind, |c| {
        c.common.server.request_timeout = Duration::from_millis(500);
    })
    .await;
    let token = admin("org-a");
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut request = http_integration("example", &upstream.url());
    request.timeouts = Some(pb::Timeouts {
        connect: None,
        call: Some(prost_types::Duration {
            seconds: 30,
            nanos: 0,
        }),
    });
    let id = create(&mut h, &token, request).await.id;

    // Without a deadline of the caller: the integration's limit applies.
    let response = h
        .client
        .execute_tool(execute(&id, "sleep", json!({"ms": 1500}), &token))
        .await
        .expect("not cut by the default request timeout")
        .into_inner();
    assert_eq!(texts(&response), ["slept 1500ms"]);

    // With a longer deadline of the caller: honoured.
    let mut request = execute(&id, "sleep", json!({"ms": 1500}), &token);
    request.set_timeout(Duration::from_secs(20));
    let response = h
        .client
        .execute_tool(request)
        .await
        .expect("the caller's deadline is honoured")
        .into_inner();
    assert_eq!(texts(&response), ["slept 1500ms"]);
}

db_tests!(
    an_organization_at_its_concurrency_limit_leaves_others_served,
    an_organization_over_its_rate_is_refused_with_a_retry_delay_and_others_are_not,
    a_tool_call_longer_than_the_default_request_timeout_finishes,
);

#[test]
fn help_does_not_print_secret_environment_values() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-service"))
        .arg("--help")
        .env("DATABASE_URL", "postgres://sb:hunter2-db@db.internal/sb")
        .env("SWITCHBOARD_JWT_SECRET", "hunter2-jwt-secret-0123456789")
        .env("SWITCHBOARD_SECRET_KEYS", "k1:hunter2-sealing-key")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://user:hunter2-otel@collector:4317",
        )
        .output()
        .expect("the binary runs");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("DATABASE_URL"), "{help}");
    assert!(!help.contains("hunter2"), "{help}");
}

/// A TCP proxy to PostgreSQL that the test can cut and restore.
mod db_proxy {
    use std::sync::{Arc, Mutex};

    use tokio::{
        net::{TcpListener, TcpStream},
        task::JoinSet,
    };

    pub struct Proxy {
        pub port: u16,
        pipes: Arc<Mutex<Option<JoinSet<()>>>>,
        accept: tokio::task::JoinHandle<()>,
    }

    impl Proxy {
        pub async fn start(target: String) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
            let port = listener.local_addr().expect("bound").port();
            let pipes = Arc::new(Mutex::new(Some(JoinSet::new())));
            let accept = {
                let pipes = pipes.clone();
                tokio::spawn(async move {
                    while let Ok((mut inbound, _)) = listener.accept().await {
                        let mut guard = pipes.lock().expect("not poisoned");
                        // Cut: connections are closed as soon as accepted.
                        let Some(set) = guard.as_mut() else { continue };
                        let target = target.clone();
                        set.spawn(async move {
                            if let Ok(mut outbound) = TcpStream::connect(&target).await {
                                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound)
                                    .await;
                            }
                        });
                    }
                })
            };
            Self {
                port,
                pipes,
                accept,
            }
        }

        /// Closes every connection and refuses new ones.
        pub fn cut(&self) {
            // Dropping the set aborts its pipes, closing both sides.
            drop(self.pipes.lock().expect("not poisoned").take());
        }

        /// Forwards new connections again.
        pub fn restore(&self) {
            *self.pipes.lock().expect("not poisoned") = Some(JoinSet::new());
        }
    }

    impl Drop for Proxy {
        fn drop(&mut self) {
            self.accept.abort();
        }
    }
}

async fn wait_status(url: &str, want: ServingStatus) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if health_status(url, MCP_SERVICE_NAME).await.ok() == Some(want)
            && health_status(url, "").await.ok() == Some(want)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "health never reported {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn health_reports_not_serving_while_postgres_is_unreachable_and_serving_again_after() {
    let db = switchboard_test_support::TestDb::postgres()
        .await
        .expect("PostgreSQL");
    let mut url = url::Url::parse(&db.url).expect("a URL");
    let target = format!(
        "{}:{}",
        url.host_str().expect("a host"),
        url.port().unwrap_or(5432)
    );
    let proxy = db_proxy::Proxy::start(target).await;
    url.set_host(Some("127.0.0.1")).expect("a host");
    url.set_port(Some(proxy.port)).expect("a port");
    let mut config = switchboard_mcp_service::Config::for_tests(
        url.as_str(),
        switchboard_test_support::TEST_JWT_SECRET,
    );
    config.common.server.readiness_interval = Duration::from_millis(100);
    config.common.server.readiness_timeout = Duration::from_secs(1);
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("starts");
    wait_serving(&server.url(), MCP_SERVICE_NAME, PATIENCE)
        .await
        .expect("SERVING with the database up");

    proxy.cut();
    wait_status(&server.url(), ServingStatus::NotServing).await;
    // Liveness does not follow the database: the replica is not restarted.
    assert_eq!(
        health_status(&server.url(), switchboard_server::LIVENESS_SERVICE)
            .await
            .expect("health answers"),
        ServingStatus::Serving
    );
    proxy.restore();
    wait_status(&server.url(), ServingStatus::Serving).await;
    server.stop().await.expect("a clean stop");
    drop(db);
}
