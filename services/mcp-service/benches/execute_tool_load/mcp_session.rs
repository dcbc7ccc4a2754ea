//! A bare MCP client over HTTP/1.1 for the calls that skip mcp-service:
//! one connection per caller, one session opened with `initialize` and
//! `notifications/initialized`, POSTs to `/mcp`.

use std::net::SocketAddr;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The MCP protocol version the sessions speak (the example server's
/// stateful mode speaks the initialize-era lifecycle).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// An MCP session on a streamable HTTP server's `/mcp`.
#[derive(Debug, Clone)]
pub struct McpSession {
    /// Where the server listens.
    pub addr: SocketAddr,
    /// The session every call joins.
    pub session_id: String,
}

/// A bare HTTP/1.1 connection to `addr`, with TCP_NODELAY.
pub async fn connect_http(addr: SocketAddr) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// POSTs `message` to the MCP endpoint; the status, headers and whole body.
pub async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    session: Option<&str>,
    message: Bytes,
) -> anyhow::Result<(StatusCode, HeaderMap, Bytes)> {
    let mut request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let request = request.body(Full::new(message))?;
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok((parts.status, parts.headers, body))
}

/// `initialize` and `notifications/initialized` on the server at `addr`:
/// the session every call on it joins.
pub async fn open_session(addr: SocketAddr) -> anyhow::Result<McpSession> {
    let mut sender = connect_http(addr).await?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "execute-tool-load", "version": "0"}
        }
    });
    let (status, headers, body) = post(
        &mut sender,
        addr,
        None,
        serde_json::to_vec(&initialize)?.into(),
    )
    .await?;
    if !status.is_success() {
        bail!(
            "initialize on {addr} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let session_id = headers
        .get("mcp-session-id")
        .context("initialize answered without a session id")?
        .to_str()?
        .to_owned();
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(
        &mut sender,
        addr,
        Some(&session_id),
        serde_json::to_vec(&initialized)?.into(),
    )
    .await?;
    if !status.is_success() {
        bail!("notifications/initialized on {addr} answered {status}");
    }
    Ok(McpSession { addr, session_id })
}
