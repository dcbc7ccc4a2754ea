//! Serving MCP over Streamable HTTP.

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use anyhow::Context as _;
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::oauth::{self, OAuthRealm};
use crate::{
    cut::{ConnectionCutter, CuttableListener},
    server::ExampleServer,
    stats::Stats,
    tls::{TlsIdentity, TlsListener},
    tool_list::ToolList,
};

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// How long [`RunningHttpServer::shutdown`] waits for open connections to
/// finish before it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpServerOptions {
    /// Address to listen on; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Whether `initialize` opens a session (`Mcp-Session-Id`) that later
    /// requests join; such a server speaks only the initialize-era
    /// lifecycle and refuses `server/discover`. When false, every request is
    /// served on its own, and the stateless lifecycle of 2026-07-28 is
    /// spoken too.
    pub stateful: bool,
    /// Delay before answering each listing (tools, resources, resource
    /// templates, prompts), to stand in for a slow server in discovery
    /// benchmarks.
    pub discovery_delay: Duration,
    /// Whether every `tools/list` page names a next page, forever: a server
    /// whose pagination never ends.
    pub endless_tool_pages: bool,
    /// Whether response streams carry event ids a client can resume from
    /// after a dropped connection (SSE priming events).
    pub resumable: bool,
    /// Whether the `record` tool is listed (see [`crate::RECORD_TOOL`]).
    pub record_tool: bool,
    /// Whether the `sales_rows` tool is listed (see
    /// [`crate::SALES_ROWS_TOOL`]).
    pub rows_tool: bool,
    /// Whether the `confirm` tool is listed (see [`crate::CONFIRM_TOOL`]).
    pub confirm_tool: bool,
    /// When not empty, the tools listed instead of the server's own, as a
    /// `tools/list` result writes each (`name`, `description`,
    /// `inputSchema`); each answers with its name and arguments.
    pub catalog: Vec<serde_json::Value>,
    /// When set, the MCP endpoint requires access tokens of this test
    /// authorization server, served beside it.
    pub oauth: Option<OAuthRealm>,
    /// Whether to serve `https://` with a certificate made at start-up
    /// ([`RunningHttpServer::certificate_pem`]), offering HTTP/2 and
    /// HTTP/1.1.
    pub tls: bool,
}

impl Default for HttpServerOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            stateful: true,
            discovery_delay: Duration::ZERO,
            endless_tool_pages: false,
            resumable: true,
            record_tool: false,
            rows_tool: false,
            confirm_tool: false,
            catalog: Vec::new(),
            oauth: None,
            tls: false,
        }
    }
}

/// A server started by [`spawn_http`].
///
/// Dropping it stops the server as [`RunningHttpServer::shutdown`] does, but
/// without waiting for it to finish.
#[derive(Debug)]
pub struct RunningHttpServer {
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// Statistics shared by every session of this server.
    pub stats: Arc<Stats>,
    /// The server's certificate (PEM) when it serves TLS: the one root a
    /// client must trust.
    pub certificate_pem: Option<String>,
    tool_list: Arc<ToolList>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
    _stop_on_drop: DropGuard,
}

impl RunningHttpServer {
    /// URL of the MCP endpoint, e.g. `http://127.0.0.1:8931/mcp`.
    pub fn url(&self) -> String {
        let scheme = if self.certificate_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{MCP_PATH}", self.addr)
    }

    /// Makes [`crate::EXTRA_TOOL`] visible, as the `add_tool` tool does but
    /// outside any client's call: only clients listening for changes
    /// (`subscriptions/listen`) hear of it. Returns whether the list changed.
    pub async fn add_extra_tool(&self) -> bool {
        self.tool_list.add_extra().await
    }

    /// Changes `echo`'s description to
    /// [`crate::CHANGED_ECHO_DESCRIPTION`] (its name and input schema stay):
    /// a server changing a tool its clients already use. Only clients
    /// listening for changes hear of it. Returns whether the list changed.
    pub async fn change_echo_description(&self) -> bool {
        self.tool_list.change_echo().await
    }

    /// How many `subscriptions/listen` streams clients have opened (a
    /// closed one counts until the next change finds it closed).
    pub async fn listening(&self) -> usize {
        self.tool_list.listening().await
    }

    /// Stops accepting connections, closes every session and waits until the
    /// server has stopped, so the port is free again.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        let mut task = self.task;
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
            .await
            .is_err()
        {
            tracing::warn!("connections still open after the grace period; dropping them");
            task.abort();
            // The task is gone either way; its outcome says nothing more.
            let _ = task.await;
        }
    }
}

/// Starts serving MCP over Streamable HTTP at [`MCP_PATH`] on `options.addr`
/// (over TLS when `options.tls`).
///
/// Accepted connections have `TCP_NODELAY` set: MCP messages are small
/// request/response exchanges that Nagle's algorithm would otherwise delay.
pub async fn spawn_http(options: HttpServerOptions) -> anyhow::Result<RunningHttpServer> {
    let listener = TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("binding {}", options.addr))?;
    let addr = listener.local_addr().context("reading the bound address")?;

    let stats = Arc::new(Stats::default());
    let cutter = ConnectionCutter::default();
    let prototype = ExampleServer::new(Arc::clone(&stats))
        .with_discovery_delay(options.discovery_delay)
        .with_endless_tool_pages(options.endless_tool_pages)
        .with_record_tool(options.record_tool)
        .with_rows_tool(options.rows_tool)
        .with_confirm_tool(options.confirm_tool)
        .with_catalog(
            options
                .catalog
                .iter()
                .map(|tool| serde_json::from_value(tool.clone()))
                .collect::<Result<_, _>>()
                .context("a catalog tool is not an MCP tool")?,
        )
        .with_initialize_only(options.stateful)
        .with_connection_cutter(cutter.clone());
    let tool_list = prototype.tool_list();
    let cancel = CancellationToken::new();
    let (config, sessions) = session_config(&options, &cancel, addr);
    let service = StreamableHttpService::new(
        move || Ok(prototype.new_session()),
        Arc::new(sessions),
        config,
    );
    let mut router = axum::Router::new().nest_service(MCP_PATH, service).layer(
        axum::middleware::from_fn_with_state(Arc::clone(&stats), record_request),
    );
    if let Some(realm) = options.oauth {
        let scheme = if options.tls { "https" } else { "http" };
        realm.set_base(format!("{scheme}://{addr}"));
        router = router
            .fallback(|| async { axum::http::StatusCode::NOT_FOUND })
            .layer(axum::middleware::from_fn_with_state(realm, oauth::guard));
    }

    let listener = CuttableListener {
        inner: listener,
        cutter,
        stats: Arc::clone(&stats),
    };
    let tls = options.tls.then(TlsIdentity::generate).transpose()?;
    let certificate_pem = tls.as_ref().map(|tls| tls.certificate_pem.clone());
    let task = tokio::spawn(serve(listener, router, tls, cancel.clone()));
    tracing::info!(%addr, stateful = options.stateful, "serving mcp over http");

    Ok(RunningHttpServer {
        addr,
        stats,
        certificate_pem,
        tool_list,
        _stop_on_drop: cancel.clone().drop_guard(),
        cancel,
        task,
    })
}

/// The MCP endpoint's settings: sessions or none, resumable streams or not,
/// and the hosts it answers to.
fn session_config(
    options: &HttpServerOptions,
    cancel: &CancellationToken,
    addr: SocketAddr,
) -> (StreamableHttpServerConfig, LocalSessionManager) {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(options.stateful)
        .with_cancellation_token(cancel.child_token())
        .with_allowed_hosts(allowed_hosts(addr));
    let config = if options.resumable {
        config
    } else {
        config.with_sse_retry(None)
    };
    let mut sessions = LocalSessionManager::default();
    if !options.resumable {
        sessions.session_config.sse_retry = None;
    }
    (config, sessions)
}

/// Serves `router` on `listener` (over TLS with `tls`) until `cancel`.
async fn serve(
    listener: CuttableListener,
    router: axum::Router,
    tls: Option<TlsIdentity>,
    cancel: CancellationToken,
) {
    let stopped = cancel.cancelled_owned();
    let served = match tls {
        Some(tls) => {
            let listener = TlsListener {
                inner: listener,
                acceptor: tls.acceptor,
            };
            axum::serve(listener, router)
                .with_graceful_shutdown(stopped)
                .await
        }
        None => {
            axum::serve(listener, router)
                .with_graceful_shutdown(stopped)
                .await
        }
    };
    if let Err(error) = served {
        tracing::error!(%error, "http server failed");
    }
}

/// Notes each request's HTTP version and `traceparent` header, so tests can
/// see how a client connected and the trace context it forwarded.
async fn record_request(
    axum::extract::State(stats): axum::extract::State<Arc<Stats>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    stats.record_http_version(request.version());
    if let Some(traceparent) = request
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        stats.record_traceparent(traceparent);
    }
    next.run(request).await
}

/// Hosts accepted in the `Host` header: loopback names, plus the listening
/// address itself when it is a specific non-loopback one. Anything else is
/// refused to guard against DNS rebinding.
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let ip = addr.ip();
    if !ip.is_loopback() && !ip.is_unspecified() {
        hosts.push(ip.to_string());
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_always_allowed() {
        let hosts = allowed_hosts(SocketAddr::from(([127, 0, 0, 1], 80)));
        assert_eq!(hosts, ["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn a_specific_listen_address_is_allowed_too() {
        let hosts = allowed_hosts(SocketAddr::from(([10, 1, 2, 3], 80)));
        assert!(hosts.contains(&"10.1.2.3".to_owned()));
        let hosts = allowed_hosts(SocketAddr::from(([0, 0, 0, 0], 80)));
        assert_eq!(hosts.len(), 3);
    }
}
