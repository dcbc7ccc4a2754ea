//! The streamable HTTP MCP endpoint: MCP clients reach an organization's
//! integrations through Switchboard, with the same tokens, policies,
//! limits and audit as gRPC callers. Both eras of MCP are spoken, as the
//! client chooses: sessions opened by `initialize` (up to 2025-11-25) and
//! stateless requests with `server/discover` (2026-07-28).

mod access;
mod admission;
mod answers;
mod authority;
mod caller;
mod errors;
mod findings;
mod handler;
mod input_responses;
mod listing;
mod passthrough;
mod session_requests;
mod sessions;
mod shared_sessions;
mod standalone;
mod streams;

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use axum::{Router, middleware::from_fn_with_state, routing::get};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use switchboard_auth::Authenticator;
use switchboard_server::connections::{ConnectionLimits, FdBudget, log_limits, serve_connections};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::TcpIncoming;
use tower_http::trace::TraceLayer;
use tracing::Span;

pub(crate) use self::admission::Admission;
use self::{
    access::{Access, INTEGRATIONS_PATH, METADATA_PATH, Site, TOOLSETS_PATH},
    handler::SurfaceServer,
    sessions::{BoundedSessions, SessionLimits, deliver_relayed},
    shared_sessions::{SharedSessions, purge_idle},
    streams::{StreamLimits, Streams},
};
use crate::{
    config::EndpointArgs,
    domain::{
        audit::calls::AuditedCalls, downstream::Downstream, endpoint_session::EndpointSessionStore,
        service::IntegrationService, toolset::serve::ToolsetResolver,
    },
};

/// Whether `entry` of the allowed hosts is a host, `host:port` or a bare
/// IPv6 address.
pub(crate) fn is_host_entry(entry: &str) -> bool {
    authority::Authority::parse_entry(entry).is_some()
}

/// What the endpoint calls: the same verifier and use cases as gRPC.
pub(crate) struct EndpointParts {
    /// Verifies bearer tokens, as for gRPC calls.
    pub authenticator: Arc<Authenticator>,
    /// Resolves paths to integrations of the caller's organization.
    pub integrations: IntegrationService,
    /// Resolves paths to toolsets of the caller's organization.
    pub toolsets: ToolsetResolver,
    /// Tool calls, reads and prompts, audited.
    pub calls: AuditedCalls,
    /// The identity provider whose tokens are accepted.
    pub issuer: Option<String>,
    /// What servers send toward the endpoint's clients.
    pub downstream: Downstream,
    /// The limits of the gRPC server, which the endpoint's calls count
    /// against too.
    pub admission: Admission,
    /// The sessions every replica can serve.
    pub sessions: Arc<dyn EndpointSessionStore>,
}

/// The endpoint, ready to serve, and the token that stops it.
pub(crate) struct McpEndpoint {
    router: Router,
    sessions: Arc<BoundedSessions>,
    stop: CancellationToken,
    connections: ConnectionLimits,
}

impl McpEndpoint {
    /// The endpoint under `settings`, calling `parts`.
    pub(crate) fn new(settings: &EndpointArgs, parts: EndpointParts) -> Self {
        let stop = CancellationToken::new();
        let sessions = Arc::new(BoundedSessions::new(
            SessionLimits {
                max: settings.max_sessions,
                max_per_org: settings.max_sessions_per_org,
                idle_timeout: settings.session_idle_timeout,
            },
            parts.sessions.clone(),
        ));
        let config = transport_config(settings, &stop, parts.sessions);
        let server = SurfaceServer::new(parts.calls, parts.downstream, parts.admission);
        let service =
            StreamableHttpService::new(move || Ok(server.for_session()), sessions.clone(), config);
        let access = Arc::new(Access {
            authenticator: parts.authenticator,
            integrations: parts.integrations,
            toolsets: parts.toolsets,
            sessions: sessions.clone(),
            site: Site::new(
                settings.public_url.clone(),
                &settings.allowed_hosts(),
                parts.issuer,
            ),
        });
        // Authenticated and resolved before the MCP server sees it: what
        // the server then serves is the caller's own.
        // Malformed answers to a server's input requests are refused
        // before the MCP server reads them, once the caller is admitted.
        let input_check = from_fn_with_state(settings.max_body_bytes, input_responses::check);
        // Each long-lived stream holds a slot of its organization and of
        // the process for its life, or is refused before it begins.
        let streams = from_fn_with_state(stream_slots(settings), streams::hold);
        let integrations = Router::new()
            .route_service(&format!("{INTEGRATIONS_PATH}/{{slug}}"), service.clone())
            .route_layer(streams.clone())
            .route_layer(input_check.clone())
            .route_layer(from_fn_with_state(
                access.clone(),
                access::admit_integration,
            ));
        let toolsets = Router::new()
            .route_service(&format!("{TOOLSETS_PATH}/{{name}}"), service)
            .route_layer(streams)
            .route_layer(input_check)
            .route_layer(from_fn_with_state(access.clone(), access::admit_toolset));
        let router = integrations
            .merge(toolsets)
            .route(
                &format!("{METADATA_PATH}{INTEGRATIONS_PATH}/{{slug}}"),
                get(access::resource_metadata),
            )
            .route(
                &format!("{METADATA_PATH}{TOOLSETS_PATH}/{{name}}"),
                get(access::resource_metadata),
            )
            .with_state(access)
            // A span per HTTP request continuing the client's W3C trace;
            // each MCP operation gets its own span in the handler.
            .layer(TraceLayer::new_for_http().make_span_with(request_span));
        Self {
            router,
            sessions,
            stop,
            connections: settings.connections.limits(&FdBudget::of_process()),
        }
    }

    /// A token that stops the endpoint when cancelled.
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Binds `listen` and serves on a background task until stopped.
    pub(crate) async fn spawn(self, listen: SocketAddr) -> anyhow::Result<SocketAddr> {
        let listener = TcpListener::bind(listen).await.with_context(|| {
            format!("failed to listen on {listen} (SWITCHBOARD_MCP_ENDPOINT_LISTEN)")
        })?;
        let addr = listener.local_addr()?;
        // An answer is written in more than one segment (headers, then the
        // body or its SSE event): with Nagle's algorithm on, the second
        // waits for the client's delayed ACK, some 40 ms a call.
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        tracing::info!(%addr, "MCP endpoint listening");
        log_limits("mcp-endpoint", &self.connections, &FdBudget::of_process());
        // Within the connection bounds (header-read, first-request and idle
        // timeouts, caps of unauthenticated connections); on stop, every
        // connection is closed gracefully.
        tokio::spawn(deliver_relayed(self.sessions.clone(), self.stop.clone()));
        tokio::spawn(purge_idle(
            self.sessions.shared().clone(),
            self.sessions.idle_timeout(),
            self.stop.clone(),
        ));
        tokio::spawn(serve_connections(
            incoming,
            self.router,
            self.connections,
            self.stop.cancelled_owned(),
        ));
        Ok(addr)
    }
}

/// The streamable HTTP transport under `settings`, stopped by `stop`, its
/// sessions shared in `sessions`.
fn transport_config(
    settings: &EndpointArgs,
    stop: &CancellationToken,
    sessions: Arc<dyn EndpointSessionStore>,
) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts())
        .with_allowed_origins(settings.allowed_origins())
        .enforce_origin_validation()
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_cancellation_token(stop.child_token());
    config.session_store = Some(Arc::new(SharedSessions::new(
        sessions,
        settings.session_idle_timeout,
    )));
    if settings.allowed_hosts().is_empty() {
        config.disable_allowed_hosts()
    } else {
        config
    }
}

/// The endpoint's count of open streams, within its settings' caps.
fn stream_slots(settings: &EndpointArgs) -> Arc<Streams> {
    Streams::new(
        StreamLimits {
            max: settings.max_streams,
            max_per_org: settings.max_streams_per_org,
            max_per_session: settings.max_streams_per_session,
        },
        settings.max_body_bytes,
    )
}

fn request_span(request: &http::Request<axum::body::Body>) -> Span {
    let span = tracing::info_span!(
        "mcp.endpoint",
        otel.name = %format!("{} mcp", request.method()),
        otel.kind = "server",
        http.request.method = %request.method(),
        url.path = %request.uri().path(),
        enduser.id = tracing::field::Empty,
    );
    switchboard_telemetry::continue_trace(&span, request.headers());
    span
}
