//! A graceful stop when the database has gone away: the process gives its
//! grants back to the database on SIGTERM, and must not wait on a database
//! that no longer answers.

use std::{
    str::FromStr as _,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::json;
use sqlx::{ConnectOptions as _, postgres::PgConnectOptions};
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{
    TEST_JWT_SECRET, TestDb, authed,
    grpc::{channel, start_binary, terminate, wait_serving},
    http_integration_request, token,
};
use tokio::{
    io::copy_bidirectional,
    net::{TcpListener, TcpStream},
    sync::watch,
};

/// A loopback TCP proxy to the database that, once cut, passes no byte
/// either way while keeping every connection open, and accepts new ones
/// without answering them: a database behind a network that dropped it,
/// which neither refuses nor resets.
struct Proxy {
    port: u16,
    cut: watch::Sender<bool>,
}

impl Proxy {
    async fn to(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("bound").port();
        let (cut, cut_rx) = watch::channel(false);
        let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let (mut cut_rx, held, target) = (cut_rx.clone(), held.clone(), target.clone());
                tokio::spawn(async move {
                    if !*cut_rx.borrow() {
                        let Ok(mut server) = TcpStream::connect(&target).await else {
                            return;
                        };
                        tokio::select! {
                            _ = copy_bidirectional(&mut client, &mut server) => return,
                            _ = cut_rx.wait_for(|cut| *cut) => {}
                        }
                        held.lock().expect("not poisoned").push(server);
                    }
                    held.lock().expect("not poisoned").push(client);
                });
            }
        });
        Self { port, cut }
    }

    fn cut(&self) {
        self.cut.send_replace(true);
    }
}

#[tokio::test]
async fn a_stop_with_the_database_unreachable_ends_promptly() {
    let db = TestDb::postgres().await.expect("a test database");
    let options = PgConnectOptions::from_str(&db.url).expect("a PostgreSQL URL");
    let proxy = Proxy::to(format!("{}:{}", options.get_host(), options.get_port())).await;
    let url = options
        .host("127.0.0.1")
        .port(proxy.port)
        .to_url_lossy()
        .to_string();
    let dir = tempfile::tempdir().expect("a directory");
    let mut process = start_binary(
        env!("CARGO_BIN_EXE_mcp-service"),
        dir.path(),
        &[
            ("DATABASE_URL", url.as_str()),
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_DEV_MODE", "true"),
            ("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.1/32"),
            ("SWITCHBOARD_LOG_FORMAT", "pretty"),
        ],
    )
    .expect("mcp-service starts");
    wait_serving(&process.url, "", Duration::from_secs(30))
        .await
        .expect("mcp-service serves");

    // A call, so that the replica holds grants of calls in flight and of an
    // upstream session in the database, which a stop gives back.
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut client = McpServiceClient::new(channel(&process.url).await.expect("a channel"));
    let token = token("org-stop", "user", &["admin"]);
    let id = client
        .create_integration(authed(
            http_integration_request("example", &upstream.url()),
            &token,
        ))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;
    let call = pb::ExecuteToolRequest {
        integration_id: id,
        tool_name: "echo".into(),
        arguments: json_to_struct(&json!({"text": "x"})),
        session_scope: "s".into(),
        ..Default::default()
    };
    client
        .execute_tool(authed(call, &token))
        .await
        .expect("a call");
    drop(client);

    proxy.cut();
    let started = Instant::now();
    terminate(&process.child).expect("SIGTERM");
    // Giving the grants back waits at most 2 s for the database
    // (docs/faults.md). Without that bound the stop waits for the pool's
    // 10-s acquire timeout; 8 s leaves a busy machine room and still fails
    // such a stop.
    let bound = Duration::from_secs(8);
    let status = loop {
        if let Some(status) = process.child.try_wait().expect("the child") {
            break status;
        }
        assert!(
            started.elapsed() < bound,
            "mcp-service still running {bound:?} after SIGTERM with its database unreachable"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = started.elapsed();
    eprintln!(
        "mcp-service stopped {took:?} after SIGTERM with its database unreachable ({status})"
    );
    assert!(status.success(), "{status}");
}
