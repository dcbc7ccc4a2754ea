use std::{process::Stdio, time::Duration};

use rmcp::{ServiceExt as _, transport::TokioChildProcess};
use serde_json::json;
use switchboard_example_mcp_server::SERVER_NAME;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::common::{PATIENCE, call, install_crypto_provider, only_text};

const BINARY: &str = env!("CARGO_BIN_EXE_example-mcp-server");

#[tokio::test]
async fn binary_serves_echo_over_stdio() {
    let mut command = tokio::process::Command::new(BINARY);
    command.args(["--transport", "stdio"]);
    let transport = TokioChildProcess::new(command).expect("the binary starts");
    let client = ().serve(transport).await.expect("the handshake completes");

    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|server| server.name.as_str()),
        Some(SERVER_NAME)
    );
    let result = call(&client, "echo", json!({ "text": "over stdio" })).await;
    assert_eq!(only_text(&result), "over stdio");

    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn binary_serves_http_and_exits_cleanly_on_sigterm() {
    let mut child = tokio::process::Command::new(BINARY)
        .args(["--transport", "http", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = BufReader::new(stderr).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("stderr is readable") {
            if let Some(url) = line.strip_prefix("listening on ") {
                return url.to_owned();
            }
        }
        panic!("the binary exited before listening");
    })
    .await
    .expect("the binary prints its url");
    // Keep draining stderr so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    install_crypto_provider();
    let client = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            url,
        ))
        .await
        .expect("the handshake completes");
    let result = call(&client, "echo", json!({ "text": "over http" })).await;
    assert_eq!(only_text(&result), "over http");

    let pid = child.id().expect("the child is running");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the binary exits after SIGTERM")
        .expect("the exit status is readable");
    assert!(exit.success(), "clean exit, got {exit}");
}
