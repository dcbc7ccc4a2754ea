//! The example servers of this workspace as processes: the MCP server over
//! streamable HTTP, its pets API (an HTTP API with an OpenAPI document) and
//! the inventory gRPC service, each announcing its address on stderr.

use crate::{grpc, workspace_binary};

/// The example MCP server's binary, serving streamable HTTP on
/// `127.0.0.1:port` (at `/mcp`), ready to be given its environment and
/// spawned.
pub fn example_http_server(port: u16) -> std::process::Command {
    let mut command = std::process::Command::new(workspace_binary(
        "switchboard-example-mcp-server",
        "example-mcp-server",
    ));
    command.args([
        "--transport",
        "http",
        "--listen",
        &format!("127.0.0.1:{port}"),
    ]);
    command
}

/// The example MCP server's pets API (`--transport api`, an HTTP API with
/// an OpenAPI 3.1 document) as a process, killed when dropped.
#[derive(Debug)]
pub struct ApiProcess {
    /// The process.
    pub child: std::process::Child,
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
}

impl Drop for ApiProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ApiProcess {
    /// The API's origin, `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> &str {
        self.base_url.trim_end_matches("/v1")
    }

    async fn get(&self, path: &str) -> serde_json::Value {
        // The HTTP client's TLS needs a provider, set once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::get(format!("{}{path}", self.origin()))
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("the API answers")
            .bytes()
            .await
            .ok()
            .and_then(|body| serde_json::from_slice(&body).ok())
            .expect("JSON")
    }

    /// Its OpenAPI document, as it serves it at `/openapi.json`.
    pub async fn document(&self) -> serde_json::Value {
        self.get("/openapi.json").await
    }

    /// What `GET /v1/pets/{id}` was sent last.
    pub async fn last_seen(&self) -> Option<serde_json::Value> {
        self.get("/seen").await.as_array()?.last().cloned()
    }
}

/// Starts the pets API as a process on a free loopback port and waits (up
/// to 60 s) for it to announce its base URL. Panics when it exits or stays
/// silent.
pub fn spawn_example_api() -> ApiProcess {
    let mut child = std::process::Command::new(workspace_binary(
        "switchboard-example-mcp-server",
        "example-mcp-server",
    ))
    .args(["--transport", "api", "--listen", "127.0.0.1:0"])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("the pets API starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut process = ApiProcess {
        child,
        base_url: String::new(),
    };
    process.base_url = announced_url(stderr)
        .recv_timeout(GRPC_SERVICE_START_TIMEOUT)
        .expect("the pets API announces its URL");
    process
}

/// How long the example gRPC service gets to announce its address.
const GRPC_SERVICE_START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The example gRPC service's binary (the inventory, with server reflection)
/// listening on a free loopback port, ready to be given its environment and
/// spawned; it prints `listening on http://127.0.0.1:PORT` to stderr.
pub fn example_grpc_service() -> std::process::Command {
    let mut command = std::process::Command::new(workspace_binary(
        "switchboard-example-grpc-service",
        "example-grpc-service",
    ));
    command.args(["--listen", "127.0.0.1:0"]);
    command
}

/// Starts [`example_grpc_service`] and waits (up to 60 s) for it to announce
/// its address: the process, killed when dropped, and its `http://` URL.
/// Panics when it exits or stays silent. The rest of its stderr is copied
/// to this test's stderr.
pub fn spawn_example_grpc_service() -> grpc::ServiceProcess {
    spawn_example_grpc_service_with(&[])
}

/// [`spawn_example_grpc_service`] given `args` besides `--listen` (such as
/// `--tls-cert`, `--tls-key` and `--client-ca`): its URL is the one it
/// announces, `http://` or `https://`.
pub fn spawn_example_grpc_service_with(args: &[&str]) -> grpc::ServiceProcess {
    let mut child = example_grpc_service()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the example gRPC service starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    // Owned before waiting, so a panic below kills the child.
    let mut process = grpc::ServiceProcess {
        child,
        url: String::new(),
    };
    let announced = announced_url(stderr);
    match announced.recv_timeout(GRPC_SERVICE_START_TIMEOUT) {
        Ok(url) => process.url = url,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "the example gRPC service printed no `listening on` line within \
             {GRPC_SERVICE_START_TIMEOUT:?}"
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!(
            "the example gRPC service closed its stderr before printing its address \
             (exit status: {:?})",
            process.child.try_wait()
        ),
    }
    process
}

/// Reads `stderr` on its own thread: sends the URL of the first
/// `listening on <url>` line, and copies every other line to this process's
/// stderr (draining the pipe, so the child never blocks on a full one).
fn announced_url(stderr: std::process::ChildStderr) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead as _;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            match line.strip_prefix("listening on ") {
                Some(url) => {
                    let _ = sender.send(url.trim().to_owned());
                }
                None => eprintln!("example-grpc-service: {line}"),
            }
        }
    });
    receiver
}
