//! How the MCP endpoint bounds its clients' connections; the caps left
//! unset are derived from the process's open-file limit, as the gRPC
//! listener's are.

use std::time::Duration;

use switchboard_server::connections::{ConnectionLimits, FdBudget, Http2Limits, caps_within};

/// The endpoint's connection settings.
#[derive(Debug, Clone, clap::Args)]
pub struct EndpointConnectionArgs {
    /// The longest an HTTP/1 request's headers take to arrive once the
    /// client started sending them, or to start on a fresh connection; a
    /// slower one is closed.
    #[arg(id = "mcp_endpoint_header_read_timeout", long = "mcp-endpoint-header-read-timeout", env = "SWITCHBOARD_MCP_ENDPOINT_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,
    /// A connection that has sent no complete request this long after
    /// accept, or that never authenticated and has had no request in
    /// flight this long, is closed.
    #[arg(id = "mcp_endpoint_first_request_timeout", long = "mcp-endpoint-first-request-timeout", env = "SWITCHBOARD_MCP_ENDPOINT_FIRST_REQUEST_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub first_request_timeout: Duration,
    /// An authenticated connection with no request in flight this long is
    /// closed; an open stream (SSE) is a request in flight. An HTTP/1
    /// connection waiting for its next request is waiting for headers too,
    /// so the header-read timeout closes it first when shorter.
    #[arg(id = "mcp_endpoint_connection_idle_timeout", long = "mcp-endpoint-connection-idle-timeout", env = "SWITCHBOARD_MCP_ENDPOINT_CONNECTION_IDLE_TIMEOUT", default_value = "2m", value_parser = humantime::parse_duration)]
    pub idle_timeout: Duration,
    /// Connections open at once; at the cap a new one evicts the oldest
    /// unauthenticated connection, or is closed. Unset: a share of the
    /// open-file limit.
    #[arg(
        id = "mcp_endpoint_max_connections",
        long = "mcp-endpoint-max-connections",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_CONNECTIONS"
    )]
    pub max_connections: Option<usize>,
    /// Connections on which no request authenticated yet; at the cap a new
    /// one evicts the oldest of them. Unset: half of the maximum.
    #[arg(
        id = "mcp_endpoint_max_unauthenticated_connections",
        long = "mcp-endpoint-max-unauthenticated-connections",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_UNAUTHENTICATED_CONNECTIONS"
    )]
    pub max_unauthenticated: Option<usize>,
    /// Unauthenticated connections from one IP address; at the cap a new
    /// one evicts that address's oldest. Unset: a quarter of the
    /// unauthenticated cap.
    #[arg(
        id = "mcp_endpoint_max_unauthenticated_connections_per_ip",
        long = "mcp-endpoint-max-unauthenticated-connections-per-ip",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_UNAUTHENTICATED_CONNECTIONS_PER_IP"
    )]
    pub max_unauthenticated_per_ip: Option<usize>,
    /// Authenticated connections of one organization; past it its further
    /// connections count as unauthenticated. Unset: a quarter of the
    /// maximum.
    #[arg(
        id = "mcp_endpoint_max_connections_per_org",
        long = "mcp-endpoint-max-connections-per-org",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_CONNECTIONS_PER_ORG"
    )]
    pub max_per_org: Option<usize>,
    /// HTTP/2 streams open at once on one connection.
    #[arg(
        id = "mcp_endpoint_http2_max_concurrent_streams",
        long = "mcp-endpoint-http2-max-concurrent-streams",
        env = "SWITCHBOARD_MCP_ENDPOINT_HTTP2_MAX_CONCURRENT_STREAMS",
        default_value_t = 100
    )]
    pub http2_max_concurrent_streams: u32,
    /// Largest HTTP/2 header list of a request, in bytes.
    #[arg(
        id = "mcp_endpoint_http2_max_header_list_bytes",
        long = "mcp-endpoint-http2-max-header-list-bytes",
        env = "SWITCHBOARD_MCP_ENDPOINT_HTTP2_MAX_HEADER_LIST_BYTES",
        default_value_t = 16 * 1024
    )]
    pub http2_max_header_list_bytes: u32,
}

/// Streams a client may open and reset before they are served ("rapid
/// reset"), and streams the server may reset for a client's errors, per
/// connection; past either the connection is closed. Fixed: MCP clients
/// have no use for more, unlike gRPC channels multiplexing many calls.
const HTTP2_RESET_STREAMS: (usize, usize) = (20, 100);

impl Default for EndpointConnectionArgs {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            first_request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_connections: None,
            max_unauthenticated: None,
            max_unauthenticated_per_ip: None,
            max_per_org: None,
            http2_max_concurrent_streams: 100,
            http2_max_header_list_bytes: 16 * 1024,
        }
    }
}

impl EndpointConnectionArgs {
    /// The endpoint's limits, HTTP/1 and HTTP/2, the caps not set derived
    /// from `budget`.
    pub fn limits(&self, budget: &FdBudget) -> ConnectionLimits {
        ConnectionLimits {
            first_request_timeout: self.first_request_timeout,
            idle_timeout: self.idle_timeout,
            header_read_timeout: Some(self.header_read_timeout),
            caps: caps_within(
                budget,
                [
                    self.max_connections,
                    self.max_unauthenticated,
                    self.max_unauthenticated_per_ip,
                    self.max_per_org,
                ],
            ),
            http2: Http2Limits {
                max_concurrent_streams: self.http2_max_concurrent_streams,
                max_pending_accept_reset_streams: HTTP2_RESET_STREAMS.0,
                max_local_error_reset_streams: HTTP2_RESET_STREAMS.1,
                max_header_list_bytes: self.http2_max_header_list_bytes,
                keepalive: None,
            },
        }
    }

    /// Refuses settings the endpoint cannot serve with.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            [
                self.header_read_timeout,
                self.first_request_timeout,
                self.idle_timeout
            ]
            .iter()
            .all(|timeout| !timeout.is_zero()),
            "SWITCHBOARD_MCP_ENDPOINT_HEADER_READ_TIMEOUT, _FIRST_REQUEST_TIMEOUT and _CONNECTION_IDLE_TIMEOUT must be positive"
        );
        anyhow::ensure!(
            [
                self.max_connections,
                self.max_unauthenticated,
                self.max_unauthenticated_per_ip,
                self.max_per_org,
            ]
            .iter()
            .all(|cap| *cap != Some(0))
                && self.http2_max_concurrent_streams > 0,
            "the MCP endpoint's connection caps and SWITCHBOARD_MCP_ENDPOINT_HTTP2_MAX_CONCURRENT_STREAMS must be at least 1"
        );
        Ok(())
    }
}
