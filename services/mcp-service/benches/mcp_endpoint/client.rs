//! One MCP client of the benchmark: its own HTTP/1.1 connection and its own
//! MCP session (2025-11-25, opened by `initialize`), replaying one recorded
//! `tools/call` as `wrk` replays a recorded request, every answer checked.

use std::{net::SocketAddr, time::Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpStream;

/// The protocol version both sides speak: the example server's stateful
/// mode and the endpoint's sessions are of the initialize era.
const PROTOCOL_VERSION: &str = "2025-11-25";

/// The recorded call: `echo` of the example server, by the same name on
/// both sides (an integration's endpoint keeps its tools' own names).
const RECORDED_CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"}}}"#;

/// Where a client sends its MCP messages.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's address.
    pub addr: SocketAddr,
    /// The MCP path on it.
    pub path: String,
    /// `Authorization` header, when the server asks for one.
    pub authorization: Option<String>,
}

/// A connected client with an open session.
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    target: Target,
    session_id: String,
}

impl Client {
    /// Connects to `target` and opens a session (`initialize`, then
    /// `notifications/initialized`).
    pub async fn open(target: &Target) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(target.addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut client = Self {
            sender,
            target: target.clone(),
            session_id: String::new(),
        };
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp-endpoint-bench", "version": "0"}
            }
        });
        let (status, headers, body) = client.post(serde_json::to_vec(&initialize)?).await?;
        if !status.is_success() {
            bail!(
                "initialize on {} answered {status}: {}",
                target.path,
                String::from_utf8_lossy(&body)
            );
        }
        client.session_id = headers
            .get("mcp-session-id")
            .context("initialize answered without a session id")?
            .to_str()?
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = client.post(serde_json::to_vec(&initialized)?).await?;
        if !status.is_success() {
            bail!(
                "notifications/initialized on {} answered {status}",
                target.path
            );
        }
        Ok(client)
    }

    /// The recorded `tools/call`, its answer checked; how long it took.
    pub async fn call(&mut self) -> anyhow::Result<std::time::Duration> {
        let started = Instant::now();
        let (status, _, body) = self.post(RECORDED_CALL).await?;
        let elapsed = started.elapsed();
        let body = std::str::from_utf8(&body)?;
        if !status.is_success() || !body.contains(r#""text":"ping""#) {
            bail!(
                "tools/call on {} answered {status}: {body}",
                self.target.path
            );
        }
        Ok(elapsed)
    }

    /// POSTs `message` on the session (none before `initialize`); the
    /// status, headers and whole body (a JSON answer or its SSE stream).
    async fn post(
        &mut self,
        message: impl Into<Bytes>,
    ) -> anyhow::Result<(StatusCode, HeaderMap, Bytes)> {
        let mut request = Request::post(self.target.path.as_str())
            .header("host", self.target.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        if let Some(authorization) = &self.target.authorization {
            request = request.header("authorization", authorization);
        }
        if !self.session_id.is_empty() {
            request = request.header("mcp-session-id", &self.session_id);
        }
        let request = request.body(Full::new(message.into()))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok((parts.status, parts.headers, body))
    }
}
