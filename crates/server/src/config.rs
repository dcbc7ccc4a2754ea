//! Server settings shared by every service, from flags or environment.

use std::{net::SocketAddr, time::Duration};

/// How the gRPC server listens, limits and stops.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Address to listen on.
    #[arg(long = "listen", env = "SWITCHBOARD_LISTEN_ADDR")]
    pub listen: Option<SocketAddr>,
    /// Deadline of one unary call (or of a stream's first response); a
    /// shorter `grpc-timeout` from the client wins.
    #[arg(long, env = "SWITCHBOARD_REQUEST_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,
    /// Calls served at once across all connections; more are refused with
    /// UNAVAILABLE rather than queued.
    #[arg(long, env = "SWITCHBOARD_CONCURRENCY_LIMIT", default_value_t = 1024)]
    pub concurrency_limit: usize,
    /// Largest message accepted or sent, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_MESSAGE_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,
    /// Time between reporting NOT_SERVING and closing the listener, so that
    /// load balancers see the change before connections are refused.
    #[arg(long, env = "SWITCHBOARD_SHUTDOWN_DELAY", default_value = "0s", value_parser = humantime::parse_duration)]
    pub shutdown_delay: Duration,
    /// Time in-flight calls get to finish after the listener closes.
    #[arg(long, env = "SWITCHBOARD_DRAIN_TIMEOUT", default_value = "20s", value_parser = humantime::parse_duration)]
    pub drain_timeout: Duration,
}

impl ServerArgs {
    /// Settings for tests: an ephemeral loopback port, short shutdown.
    pub fn for_tests() -> Self {
        Self {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            request_timeout: Duration::from_secs(30),
            concurrency_limit: 1024,
            max_message_bytes: 16 * 1024 * 1024,
            shutdown_delay: Duration::ZERO,
            drain_timeout: Duration::from_secs(2),
        }
    }
}
