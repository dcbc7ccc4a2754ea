//! The gRPC listener's connection settings, from flags or environment.

use std::time::Duration;

use super::{ConnectionCaps, ConnectionLimits, FdBudget, Http2Limits};

/// How the gRPC listener bounds its connections. The caps left unset are
/// derived from the process's open-file limit ([`FdBudget`]).
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectionArgs {
    /// A connection that has sent no request this long after accept (after
    /// its TLS handshake), or that never authenticated and has had no call
    /// in flight this long, is closed.
    #[arg(long, env = "SWITCHBOARD_FIRST_REQUEST_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub first_request_timeout: Duration,
    /// An authenticated connection with no call in flight this long is
    /// closed (HTTP/2 GOAWAY; clients reconnect on their next call). An
    /// open stream is a call in flight; pings are not.
    #[arg(long, env = "SWITCHBOARD_CONNECTION_IDLE_TIMEOUT", default_value = "5m", value_parser = humantime::parse_duration)]
    pub connection_idle_timeout: Duration,
    /// Connections open at once; at the cap a new one evicts the oldest
    /// unauthenticated connection, or is closed. Unset: a share of the
    /// open-file limit.
    #[arg(long, env = "SWITCHBOARD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections open at once on which no call authenticated yet; at the
    /// cap a new one evicts the oldest of them. Unset: half of
    /// `max-connections`.
    #[arg(long, env = "SWITCHBOARD_MAX_UNAUTHENTICATED_CONNECTIONS")]
    pub max_unauthenticated_connections: Option<usize>,
    /// Unauthenticated connections from one IP address; at the cap a new
    /// one evicts that address's oldest. Unset: a quarter of
    /// `max-unauthenticated-connections`.
    #[arg(long, env = "SWITCHBOARD_MAX_UNAUTHENTICATED_CONNECTIONS_PER_IP")]
    pub max_unauthenticated_connections_per_ip: Option<usize>,
    /// Authenticated connections of one organization; past it the
    /// organization's further connections count as unauthenticated
    /// (evictable). Unset: a quarter of `max-connections`.
    #[arg(long, env = "SWITCHBOARD_MAX_CONNECTIONS_PER_ORG")]
    pub max_connections_per_org: Option<usize>,
    /// HTTP/2 streams (calls) open at once on one connection.
    #[arg(
        long,
        env = "SWITCHBOARD_HTTP2_MAX_CONCURRENT_STREAMS",
        default_value_t = 1024
    )]
    pub http2_max_concurrent_streams: u32,
    /// Streams a client may open and reset before they are served ("rapid
    /// reset"); past it the connection is closed.
    #[arg(
        long,
        env = "SWITCHBOARD_HTTP2_MAX_PENDING_RESET_STREAMS",
        default_value_t = 20
    )]
    pub http2_max_pending_reset_streams: usize,
    /// Streams the server may reset for a client's protocol errors on one
    /// connection; past it the connection is closed.
    #[arg(
        long,
        env = "SWITCHBOARD_HTTP2_MAX_LOCAL_ERROR_RESET_STREAMS",
        default_value_t = 256
    )]
    pub http2_max_local_error_reset_streams: usize,
    /// Largest header list of a call, in bytes (hyper's default; a token
    /// of a few KiB fits with room).
    #[arg(long, env = "SWITCHBOARD_HTTP2_MAX_HEADER_LIST_BYTES", default_value_t = 16 * 1024)]
    pub http2_max_header_list_bytes: u32,
}

impl Default for ConnectionArgs {
    fn default() -> Self {
        Self {
            first_request_timeout: Duration::from_secs(10),
            connection_idle_timeout: Duration::from_secs(300),
            max_connections: None,
            max_unauthenticated_connections: None,
            max_unauthenticated_connections_per_ip: None,
            max_connections_per_org: None,
            http2_max_concurrent_streams: 1024,
            http2_max_pending_reset_streams: 20,
            http2_max_local_error_reset_streams: 256,
            http2_max_header_list_bytes: 16 * 1024,
        }
    }
}

impl ConnectionArgs {
    /// The caps: those set, the others derived from `budget` (of the
    /// maximum set, when it is).
    pub fn caps(&self, budget: &FdBudget) -> ConnectionCaps {
        caps_within(
            budget,
            [
                self.max_connections,
                self.max_unauthenticated_connections,
                self.max_unauthenticated_connections_per_ip,
                self.max_connections_per_org,
            ],
        )
    }

    /// The gRPC listener's limits, HTTP/2 only, pinging every `keepalive`.
    pub fn limits(&self, budget: &FdBudget, keepalive: (Duration, Duration)) -> ConnectionLimits {
        ConnectionLimits {
            first_request_timeout: self.first_request_timeout,
            idle_timeout: self.connection_idle_timeout,
            header_read_timeout: None,
            caps: self.caps(budget),
            http2: Http2Limits {
                max_concurrent_streams: self.http2_max_concurrent_streams,
                max_pending_accept_reset_streams: self.http2_max_pending_reset_streams,
                max_local_error_reset_streams: self.http2_max_local_error_reset_streams,
                max_header_list_bytes: self.http2_max_header_list_bytes,
                keepalive: Some(keepalive),
            },
        }
    }

    /// Refuses settings that cannot serve.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.first_request_timeout.is_zero() && !self.connection_idle_timeout.is_zero(),
            "SWITCHBOARD_FIRST_REQUEST_TIMEOUT and SWITCHBOARD_CONNECTION_IDLE_TIMEOUT must be positive"
        );
        anyhow::ensure!(
            [
                self.max_connections,
                self.max_unauthenticated_connections,
                self.max_unauthenticated_connections_per_ip,
                self.max_connections_per_org,
            ]
            .iter()
            .all(|cap| *cap != Some(0))
                && self.http2_max_concurrent_streams > 0,
            "connection caps and SWITCHBOARD_HTTP2_MAX_CONCURRENT_STREAMS must be at least 1"
        );
        Ok(())
    }
}

/// Caps `[max, unauthenticated, per IP, per organization]`, each the one
/// set or derived: from `budget` when no maximum is set, else in the same
/// proportions of the maximum set.
pub fn caps_within(
    budget: &FdBudget,
    [max, unauthenticated, per_ip, per_org]: [Option<usize>; 4],
) -> ConnectionCaps {
    let derived = budget.caps();
    let max_connections = max.unwrap_or(derived.max_connections);
    let max_unauthenticated = unauthenticated.unwrap_or((max_connections / 2).max(1));
    ConnectionCaps {
        max_connections,
        max_unauthenticated,
        max_unauthenticated_per_ip: per_ip.unwrap_or((max_unauthenticated / 4).max(1)),
        max_per_org: per_org.unwrap_or((max_connections / 4).max(1)),
    }
}
