use serde_json::json;
use switchboard_example_mcp_server::{
    HttpServerOptions, SERVER_INSTRUCTIONS, SERVER_NAME, StatsSnapshot,
};

use crate::common::{call, connect, only_text, start_server, start_server_with};

#[tokio::test]
async fn server_reports_its_name_version_and_instructions() {
    let server = start_server().await;
    let client = connect(&server).await;

    let info = client
        .peer_info()
        .expect("the handshake stored server info");
    let implementation = info.server_info.as_ref().expect("server info");
    assert_eq!(implementation.name, SERVER_NAME);
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.instructions.as_deref(), Some(SERVER_INSTRUCTIONS));
    let tools = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools.list_changed, Some(true));
    assert!(info.capabilities.resources.is_some());
    assert!(info.capabilities.prompts.is_some());

    server.shutdown().await;
}

#[tokio::test]
async fn counter_is_shared_within_a_session_and_not_across_sessions() {
    let server = start_server().await;

    let first = connect(&server).await;
    assert_eq!(only_text(&call(&first, "counter", json!({})).await), "1");
    assert_eq!(only_text(&call(&first, "counter", json!({})).await), "2");

    let second = connect(&server).await;
    assert_eq!(only_text(&call(&second, "counter", json!({})).await), "1");
    assert_eq!(only_text(&call(&first, "counter", json!({})).await), "3");

    assert_eq!(server.stats.snapshot().sessions, 2);
    let reported: StatsSnapshot =
        serde_json::from_str(only_text(&call(&second, "stats", json!({})).await))
            .expect("stats are JSON");
    assert_eq!(reported.sessions, 2);

    server.shutdown().await;
}

#[tokio::test]
async fn stateless_server_serves_calls() {
    let server = start_server_with(HttpServerOptions {
        stateful: false,
        ..HttpServerOptions::default()
    })
    .await;
    let client = connect(&server).await;

    let result = call(&client, "echo", json!({ "text": "stateless" })).await;
    assert_eq!(only_text(&result), "stateless");
    assert_eq!(client.list_all_tools().await.expect("tools").len(), 10);

    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_releases_the_port_even_with_a_connected_client() {
    let server = start_server().await;
    let client = connect(&server).await;
    call(&client, "echo", json!({ "text": "hi" })).await;
    let addr = server.addr;

    let started = std::time::Instant::now();
    server.shutdown().await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "shutdown took {:?}",
        started.elapsed()
    );
    tokio::net::TcpListener::bind(addr)
        .await
        .expect("the port is free after shutdown");
}
