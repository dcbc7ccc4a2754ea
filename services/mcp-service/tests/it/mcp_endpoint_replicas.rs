//! The MCP endpoint on two replicas of one database behind a proxy that
//! sends each new connection to the other replica: a session opened on one
//! is served by both, to its owner only.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use switchboard_example_mcp_server::{CONFIRM_TOOL, HttpServerOptions, spawn_http};
use switchboard_server::RunningServer;
use switchboard_test_support::{
    DbKind, TEST_JWT_SECRET, db_tests,
    grpc::{ServiceProcess, free_port, start_binary},
    token,
};
use tokio::net::{TcpListener, TcpStream};

use crate::mcp_endpoint::{
    Endpoint, initialize_at, initialize_url, python_client_plan, sdk_client_plan, setup_with,
};
use crate::support::{Harness, admin, create, http_integration, member, start_with};

/// A TCP proxy handing each new connection to the next of `backends` in
/// turn (the one after, when it refuses); counts the connections each was
/// given.
struct RoundRobin {
    addr: SocketAddr,
    backends: Vec<SocketAddr>,
    given: Arc<Vec<AtomicUsize>>,
}

impl RoundRobin {
    async fn start(backends: Vec<SocketAddr>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let given: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = given.clone();
        let targets = backends.clone();
        tokio::spawn(async move {
            let backends = targets;
            let mut next = 0;
            while let Ok((mut client, _)) = listener.accept().await {
                let index = next % backends.len();
                next += 1;
                counts[index].fetch_add(1, Ordering::Relaxed);
                let order: Vec<SocketAddr> = (0..backends.len())
                    .map(|k| backends[(index + k) % backends.len()])
                    .collect();
                tokio::spawn(async move {
                    // A backend that refuses connections is passed over, as a
                    // Service leaves out a pod that is gone.
                    for backend in order {
                        if let Ok(mut server) = TcpStream::connect(backend).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                            return;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            backends,
            given,
        }
    }

    fn given(&self) -> Vec<usize> {
        self.given
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect()
    }
}

/// Replica A (the endpoint's harness), a second replica B on its database,
/// and the proxy in front of both.
async fn two_replicas(kind: DbKind) -> (Endpoint, RunningServer, RoundRobin) {
    let e = setup_with(kind, |_| {}).await;
    let b_addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let (b, _client) =
        e.h.replica(|config| config.endpoint.listen = Some(b_addr))
            .await;
    let proxy = RoundRobin::start(vec![e.addr(), b_addr]).await;
    (e, b, proxy)
}

fn through(proxy: &RoundRobin, slug: &str) -> String {
    format!("http://{}/mcp/integrations/{slug}", proxy.addr)
}

fn echo_steps(calls: usize) -> Value {
    Value::Array(
        (0..calls)
            .map(|i| json!({ "op": "callTool", "name": "echo", "arguments": { "text": format!("call {i}") }, "timeoutMs": 5000 }))
            .collect(),
    )
}

fn failures(out: &Value) -> Vec<&Value> {
    out["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|step| step.get("ok").is_none())
        .collect()
}

async fn a_session_is_served_by_whichever_replica_a_request_lands_on(kind: DbKind) {
    let (_e, _b, proxy) = two_replicas(kind).await;
    let calls = 200;
    let out = python_client_plan(json!({
        "url": through(&proxy, "example"),
        "token": admin("org-a"),
        "mode": "legacy",
        "fresh_connections": true,
        "steps": echo_steps(calls),
    }))
    .await;

    assert_eq!(out["connected"], true, "{out}");
    assert_eq!(out["steps"].as_array().map(Vec::len), Some(calls), "{out}");
    assert!(failures(&out).is_empty(), "failed: {:?}", failures(&out));
    for (i, step) in out["steps"].as_array().expect("steps").iter().enumerate() {
        assert_eq!(
            step["ok"]["content"][0]["text"],
            format!("call {i}"),
            "call {i} answered in order"
        );
    }
    let given = proxy.given();
    assert!(
        given.iter().all(|&count| count > calls / 4),
        "the connections went to both replicas: {given:?}"
    );
}

/// A `tools/list` POST on session `session` at `url` with `token`.
async fn list_tools(url: &str, session: &str, token: &str) -> reqwest::StatusCode {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }))
        .send()
        .await
        .expect("answers")
        .status()
}

async fn another_replica_serves_a_session_to_its_owner_only(kind: DbKind) {
    let (e, _b, proxy) = two_replicas(kind).await;
    let opened = initialize_at(&e, "example", &member("org-a")).await;
    assert_eq!(opened.status(), reqwest::StatusCode::OK);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    drop(opened);
    let b_url = format!("http://{}/mcp/integrations/example", proxy.backends[1]);

    let another_user = token("org-a", "another-user", &["member"]);
    for (who, token) in [
        ("another user", another_user),
        ("another organization", admin("org-b")),
    ] {
        assert_eq!(
            list_tools(&b_url, &session, &token).await,
            reqwest::StatusCode::NOT_FOUND,
            "{who} is not served the session on the replica that did not open it"
        );
    }
    assert_eq!(
        list_tools(&b_url, "not-a-session", &member("org-a")).await,
        reqwest::StatusCode::NOT_FOUND,
        "an unknown session is not found"
    );
    assert_eq!(
        list_tools(&b_url, &session, &member("org-a")).await,
        reqwest::StatusCode::OK,
        "its owner is served on the other replica"
    );
}

async fn a_session_idle_past_its_time_is_not_restored(kind: DbKind) {
    let idle = Duration::from_millis(400);
    let e = setup_with(kind, |config| config.endpoint.session_idle_timeout = idle).await;
    let b_addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let (_b, _client) =
        e.h.replica(|config| {
            config.endpoint.listen = Some(b_addr);
            config.endpoint.session_idle_timeout = idle;
        })
        .await;
    let opened = initialize_at(&e, "example", &member("org-a")).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    drop(opened);
    tokio::time::sleep(idle * 3).await;
    let b_url = format!("http://{b_addr}/mcp/integrations/example");
    assert_eq!(
        list_tools(&b_url, &session, &member("org-a")).await,
        reqwest::StatusCode::NOT_FOUND,
        "a session idle past its time is gone on every replica"
    );
}

/// Two replicas in front of a server that asks before it confirms
/// ([`CONFIRM_TOOL`]), as integration `example` of org-a.
async fn two_replicas_confirming(kind: DbKind) -> (Harness, RunningServer, RoundRobin) {
    let upstream = spawn_http(HttpServerOptions {
        stateful: false,
        confirm_tool: true,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let addrs: Vec<SocketAddr> = (0..2)
        .map(|_| SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port"))))
        .collect();
    let mut h = start_with(kind, |config| config.endpoint.listen = Some(addrs[0])).await;
    create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await;
    let (b, _client) = h
        .replica(|config| config.endpoint.listen = Some(addrs[1]))
        .await;
    // The upstream lives as long as the test's process needs it.
    std::mem::forget(upstream);
    (h, b, RoundRobin::start(addrs).await)
}

async fn a_servers_question_reaches_the_client_whichever_replica_its_answer_lands_on(kind: DbKind) {
    let (_h, _b, proxy) = two_replicas_confirming(kind).await;
    let calls = 200;
    let steps: Vec<Value> = (0..calls)
        .map(|i| {
            if i % 10 == 9 {
                json!({ "op": "callTool", "name": CONFIRM_TOOL, "arguments": { "action": format!("deploy {i}") } })
            } else {
                json!({ "op": "callTool", "name": "echo", "arguments": { "text": format!("call {i}") } })
            }
        })
        .collect();
    let out = python_client_plan(json!({
        "url": through(&proxy, "example"),
        "token": member("org-a"),
        "mode": "legacy",
        "fresh_connections": true,
        "elicitation": { "action": "accept", "content": { "confirmed": true } },
        "steps": steps,
    }))
    .await;

    assert!(failures(&out).is_empty(), "failed: {:?}", failures(&out));
    assert_eq!(
        out["elicitations"].as_array().map(Vec::len),
        Some(calls / 10),
        "{out}"
    );
    for i in (9..calls).step_by(10) {
        assert_eq!(
            out["steps"][i]["ok"]["content"][0]["text"],
            format!("confirmed deploy {i}"),
            "the server heard the answer to question {i}"
        );
    }
}

/// A second replica as a process of its own on the harness's database,
/// its endpoint on `endpoint`.
fn replica_process(h: &Harness, endpoint: SocketAddr) -> ServiceProcess {
    let endpoint = endpoint.to_string();
    start_binary(
        env!("CARGO_BIN_EXE_mcp-service"),
        &std::env::temp_dir(),
        &[
            ("DATABASE_URL", h.db.url.as_str()),
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            // The integration holds no secret: any key ring will do.
            (
                "SWITCHBOARD_SECRET_KEYS",
                "test:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            ),
            ("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.0/8"),
            ("SWITCHBOARD_MCP_ENDPOINT_LISTEN", endpoint.as_str()),
            ("RUST_LOG", "error"),
        ],
    )
    .expect("the replica starts")
}

async fn listening(addr: SocketAddr) {
    for _ in 0..200 {
        if TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on {addr}");
}

async fn a_replica_killed_mid_way_costs_at_most_the_call_in_flight(kind: DbKind) {
    let e = setup_with(kind, |_| {}).await;
    let b_addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut b = replica_process(&e.h, b_addr);
    listening(b_addr).await;
    let proxy = RoundRobin::start(vec![e.addr(), b_addr]).await;
    let calls = 200;
    let client = tokio::spawn(sdk_client_plan(json!({
        "url": through(&proxy, "example"),
        "token": member("org-a"),
        "mode": "legacy",
        "fresh_connections": true,
        "steps": echo_steps(calls),
    })));
    while proxy.given().iter().sum::<usize>() < calls / 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    b.child.kill().expect("killed");
    let out = client.await.expect("the client ran");

    assert_eq!(out["steps"].as_array().map(Vec::len), Some(calls), "{out}");
    let failed = failures(&out);
    assert!(
        failed.len() <= 1,
        "a sequential client has one call in flight when its replica dies: {failed:?}"
    );
    let given = proxy.given();
    assert!(
        given[1] > 10,
        "the killed replica served calls first: {given:?}"
    );
}

/// POSTs `message` on session `session` at `url` with `token`.
pub(crate) async fn post(
    url: &str,
    session: &str,
    token: &str,
    message: Value,
) -> reqwest::StatusCode {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&message)
        .send()
        .await
        .expect("answers")
        .status()
}

async fn answers_left_for_another_replica_stop_at_the_limit(kind: DbKind) {
    let e = setup_with(kind, |_| {}).await;
    let opened = initialize_at(&e, "example", &member("org-a")).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    drop(opened);
    // Answers naming a replica tag no replica of this test has.
    let answer = |i: usize| json!({ "jsonrpc": "2.0", "id": format!("0123456789abcdef.n{i}"), "result": {} });
    for i in 0..16 {
        assert_eq!(
            post(&e.url("example"), &session, &member("org-a"), answer(i)).await,
            reqwest::StatusCode::ACCEPTED,
            "answer {i} is left for its replica"
        );
    }
    assert_eq!(
        post(&e.url("example"), &session, &member("org-a"), answer(16)).await,
        reqwest::StatusCode::INTERNAL_SERVER_ERROR,
        "the 17th answer waiting for other replicas is refused"
    );
}

async fn an_organizations_session_limit_counts_every_replica(kind: DbKind) {
    let e = setup_with(kind, |config| config.endpoint.max_sessions_per_org = 1).await;
    let b_addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let (_b, _client) =
        e.h.replica(|config| {
            config.endpoint.listen = Some(b_addr);
            config.endpoint.max_sessions_per_org = 1;
        })
        .await;
    let first = initialize_at(&e, "example", &member("org-a")).await;
    assert_eq!(first.status(), reqwest::StatusCode::OK);
    let on_b = initialize_url(
        &format!("http://{b_addr}/mcp/integrations/example"),
        &member("org-a"),
    )
    .await;
    assert_eq!(
        on_b.status(),
        reqwest::StatusCode::SERVICE_UNAVAILABLE,
        "the organization's one session is open on the other replica"
    );
}

db_tests!(
    answers_left_for_another_replica_stop_at_the_limit,
    an_organizations_session_limit_counts_every_replica,
    a_replica_killed_mid_way_costs_at_most_the_call_in_flight,
    a_servers_question_reaches_the_client_whichever_replica_its_answer_lands_on,
    a_session_is_served_by_whichever_replica_a_request_lands_on,
    another_replica_serves_a_session_to_its_owner_only,
    a_session_idle_past_its_time_is_not_restored,
);
