//! Shared setup: a server per test and rmcp clients connected to it.

use std::{sync::Once, time::Duration};

use rmcp::{
    ClientHandler, RoleClient, ServiceError, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult, ErrorData, JsonObject},
    service::{Peer, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::Value;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};

/// How long a test waits for something the server does asynchronously.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// reqwest is built without a default TLS provider; it needs one installed
/// even for plain-HTTP clients.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another test binary component may have installed one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub async fn start_server() -> RunningHttpServer {
    start_server_with(HttpServerOptions::default()).await
}

pub async fn start_server_with(options: HttpServerOptions) -> RunningHttpServer {
    spawn_http(options)
        .await
        .expect("the example server starts")
}

/// A client with the default (no-op) handler.
pub async fn connect(server: &RunningHttpServer) -> RunningService<RoleClient, ()> {
    connect_with(server, ()).await
}

pub async fn connect_with<H: ClientHandler>(
    server: &RunningHttpServer,
    handler: H,
) -> RunningService<RoleClient, H> {
    install_crypto_provider();
    handler
        .serve(StreamableHttpClientTransport::from_uri(server.url()))
        .await
        .expect("the client completes the initialize handshake")
}

pub fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("tool arguments must be an object, got {other}"),
    }
}

pub async fn call(
    client: &Peer<RoleClient>,
    name: &'static str,
    arguments: Value,
) -> CallToolResult {
    try_call(client, name, arguments)
        .await
        .unwrap_or_else(|error| panic!("calling {name} failed: {error}"))
}

pub async fn try_call(
    client: &Peer<RoleClient>,
    name: &'static str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args(arguments)))
        .await
}

/// The text of the only content block of `result`.
pub fn only_text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    &result.content[0]
        .as_text()
        .expect("the content block is text")
        .text
}

/// The MCP error a failed request carried.
pub fn mcp_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("expected an MCP error, got {other}"),
    }
}

/// Waits until `condition` holds, failing the test after [`PATIENCE`].
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
