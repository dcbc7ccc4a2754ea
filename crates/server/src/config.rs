//! Server settings shared by every service, from flags or environment.

use std::{net::SocketAddr, num::NonZeroU32, path::PathBuf, time::Duration};

use crate::{OrgLimitTable, OrgLimits, TlsArgs, connections::ConnectionArgs};

/// How the gRPC server listens, limits and stops.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Address to listen on.
    #[arg(long = "listen", env = "SWITCHBOARD_LISTEN_ADDR")]
    pub listen: Option<SocketAddr>,
    /// Deadline of a unary call (or of a stream's first response) that sends
    /// no `grpc-timeout`; calls that bound themselves by an integration's
    /// own limits (tool calls) get `max-request-timeout` instead.
    #[arg(long, env = "SWITCHBOARD_REQUEST_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,
    /// Longest deadline a caller may ask for with `grpc-timeout`; longer ones
    /// are cut to it. At least the longest per-call limit an integration may
    /// set, so that no tool call is cut before its own limit.
    #[arg(long, env = "SWITCHBOARD_MAX_REQUEST_TIMEOUT", default_value = "15m", value_parser = humantime::parse_duration)]
    pub max_request_timeout: Duration,
    /// Calls served at once across all connections, a streaming call until
    /// its stream ends; more are refused with UNAVAILABLE rather than queued.
    #[arg(long, env = "SWITCHBOARD_CONCURRENCY_LIMIT", default_value_t = 1024)]
    pub concurrency_limit: usize,
    /// Calls one organization may have in flight at once, a streaming call
    /// until its stream ends, so that one organization's slow upstreams or
    /// open streams cannot take every slot of `concurrency-limit`. A call
    /// past it waits its turn (`org-queue-wait`); one that cannot be served
    /// in time is refused with RESOURCE_EXHAUSTED.
    #[arg(long, env = "SWITCHBOARD_ORG_CONCURRENCY_LIMIT", default_value_t = 256)]
    pub org_concurrency_limit: usize,
    /// The longest a call of an organization at its concurrency limit waits
    /// for one of its calls to end, in its organization's own line (as many
    /// calls may wait as may run; more are refused at once); a caller's
    /// shorter `grpc-timeout` shortens it to nine tenths of that. `0s`
    /// refuses at once.
    #[arg(long, env = "SWITCHBOARD_ORG_QUEUE_WAIT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub org_queue_wait: Duration,
    /// The longest a call refused at its organization's rate is held before
    /// the refusal is answered: as long as the wait for the organization's
    /// next token, at most this and nine tenths of the caller's
    /// `grpc-timeout`, the retry delay shortened by as much. A caller that
    /// calls again at once when refused slows itself to one call per pause
    /// instead of taking the cores other organizations' calls need. `0s`
    /// answers at once.
    #[arg(long, env = "SWITCHBOARD_ORG_RATE_REFUSAL_HOLD", default_value = "250ms", value_parser = humantime::parse_duration)]
    pub org_rate_refusal_hold: Duration,
    /// The most refusals at an organization's rate held at once in the
    /// process (`org-rate-refusal-hold`); more are answered at once.
    #[arg(
        long,
        env = "SWITCHBOARD_ORG_RATE_HELD_REFUSALS",
        default_value_t = 1024
    )]
    pub org_rate_held_refusals: usize,
    /// The most tokens refused at their organization's rate remembered at
    /// once (as digests, each until its organization's next token), so that
    /// the same token's next calls are refused before it is verified again;
    /// past it calls are verified and refused as usual. `0` remembers none.
    #[arg(
        long,
        env = "SWITCHBOARD_ORG_RATE_REFUSED_TOKENS",
        default_value_t = 1024
    )]
    pub org_rate_refused_tokens: usize,
    /// Calls per second one organization may make on average (token bucket,
    /// shared by the replicas on PostgreSQL); more are refused with
    /// RESOURCE_EXHAUSTED and a retry delay.
    #[arg(long, env = "SWITCHBOARD_ORG_RATE_LIMIT", default_value = "1000")]
    pub org_rate_limit: NonZeroU32,
    /// Calls one organization may make at once above its rate (the bucket's
    /// size).
    #[arg(long, env = "SWITCHBOARD_ORG_RATE_BURST", default_value = "2000")]
    pub org_rate_burst: NonZeroU32,
    /// A TOML file of limits per organization, overriding the three above:
    /// `[orgs."<org id>"]` with `concurrency`, `rate` and `burst`, for
    /// mcp-service `sessions` and `stdio_processes`, for runs-service
    /// `data_source_bytes`, each optional (at most 10,000 organizations,
    /// 1 MiB).
    #[arg(long, env = "SWITCHBOARD_ORG_LIMITS_FILE")]
    pub org_limits_file: Option<PathBuf>,
    /// How long a replica's grant of calls in flight holds without being
    /// renewed (on PostgreSQL, where replicas share the organizations'
    /// limits): the slots of a replica that stopped come back after it.
    #[arg(long, env = "SWITCHBOARD_ORG_SLOT_GRANT_TTL", default_value = "10s", value_parser = humantime::parse_duration)]
    pub org_slot_grant_ttl: Duration,
    /// Time between two renewals of a replica's grants, which also give
    /// back the slots no call used since the last one; shorter than the
    /// grant's time-to-live.
    #[arg(long, env = "SWITCHBOARD_ORG_SLOT_GRANT_HEARTBEAT", default_value = "2s", value_parser = humantime::parse_duration)]
    pub org_slot_grant_heartbeat: Duration,
    /// Slots a replica asks for at once while its organization is far from
    /// its limit, so that the next calls are admitted without asking the
    /// database; near the limit it asks for one at a time.
    #[arg(long, env = "SWITCHBOARD_ORG_SLOT_GRANT_BATCH", default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub org_slot_grant_batch: usize,
    /// Tokens of calls per second a replica takes at once from its
    /// organization's bucket, so that the next calls are admitted without
    /// asking the database; a bucket holding fewer gives what it holds. A
    /// replica may hold this many less one unspent.
    #[arg(long, env = "SWITCHBOARD_ORG_RATE_GRANT_BATCH", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub org_rate_grant_batch: u32,
    /// Largest message accepted or sent, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_MESSAGE_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,
    /// Time between two checks that the database answers; health reports
    /// NOT_SERVING while it does not.
    #[arg(long, env = "SWITCHBOARD_READINESS_INTERVAL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub readiness_interval: Duration,
    /// Time the database gets to answer a readiness check.
    #[arg(long, env = "SWITCHBOARD_READINESS_TIMEOUT", default_value = "2s", value_parser = humantime::parse_duration)]
    pub readiness_timeout: Duration,
    /// Time between reporting NOT_SERVING and closing the listener, so that
    /// load balancers see the change before connections are refused.
    #[arg(long, env = "SWITCHBOARD_SHUTDOWN_DELAY", default_value = "0s", value_parser = humantime::parse_duration)]
    pub shutdown_delay: Duration,
    /// Time in-flight calls get to finish after the listener closes.
    #[arg(long, env = "SWITCHBOARD_DRAIN_TIMEOUT", default_value = "20s", value_parser = humantime::parse_duration)]
    pub drain_timeout: Duration,
    /// How often an HTTP/2 ping is sent on a quiet connection, so that
    /// proxies and load balancers do not close a long, quiet stream as idle.
    #[arg(long, env = "SWITCHBOARD_HTTP2_KEEPALIVE_INTERVAL", default_value = "30s", value_parser = humantime::parse_duration)]
    pub http2_keepalive_interval: Duration,
    /// How long an HTTP/2 ping may go unanswered before the connection is
    /// closed as dead.
    #[arg(long, env = "SWITCHBOARD_HTTP2_KEEPALIVE_TIMEOUT", default_value = "20s", value_parser = humantime::parse_duration)]
    pub http2_keepalive_timeout: Duration,
    /// TLS and mutual TLS; plaintext when no certificate is set.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Bounds of the connections: timeouts, caps, HTTP/2 limits.
    #[command(flatten)]
    pub connections: ConnectionArgs,
}

impl ServerArgs {
    /// Settings for tests: an ephemeral loopback port, short shutdown.
    pub fn for_tests() -> Self {
        Self {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            request_timeout: Duration::from_secs(30),
            max_request_timeout: Duration::from_secs(15 * 60),
            concurrency_limit: 1024,
            org_concurrency_limit: 256,
            org_queue_wait: Duration::from_secs(5),
            org_rate_refusal_hold: Duration::from_millis(250),
            org_rate_held_refusals: 1024,
            org_rate_refused_tokens: 1024,
            org_rate_limit: NonZeroU32::new(1000).expect("1000 is not zero"),
            org_rate_burst: NonZeroU32::new(2000).expect("2000 is not zero"),
            org_limits_file: None,
            org_slot_grant_ttl: Duration::from_secs(10),
            org_slot_grant_heartbeat: Duration::from_secs(2),
            org_slot_grant_batch: 8,
            org_rate_grant_batch: 16,
            max_message_bytes: 16 * 1024 * 1024,
            readiness_interval: Duration::from_secs(5),
            readiness_timeout: Duration::from_secs(2),
            shutdown_delay: Duration::ZERO,
            drain_timeout: Duration::from_secs(2),
            http2_keepalive_interval: Duration::from_secs(30),
            http2_keepalive_timeout: Duration::from_secs(20),
            tls: TlsArgs::default(),
            connections: ConnectionArgs::default(),
        }
    }

    /// The limits of each organization: the defaults, overridden by the
    /// limits file when one is set (read and checked here).
    pub fn org_limits(&self) -> anyhow::Result<OrgLimitTable> {
        let defaults = OrgLimits {
            concurrency: self.org_concurrency_limit,
            rate: self.org_rate_limit,
            burst: self.org_rate_burst,
            sessions: None,
            stdio_processes: None,
            data_source_bytes: None,
        };
        match &self.org_limits_file {
            Some(path) => OrgLimitTable::read(defaults, path),
            None => Ok(OrgLimitTable::uniform(defaults)),
        }
    }

    /// The limits of each organization as [`Self::org_limits`] reads them,
    /// or the defaults alone when the limits file is refused: for the
    /// limits a service enforces itself, built before it serves. The server
    /// refuses such a file at start, in one place, with its reason.
    pub fn org_limits_or_defaults(&self) -> OrgLimitTable {
        self.org_limits().unwrap_or_else(|_| {
            OrgLimitTable::uniform(OrgLimits {
                concurrency: self.org_concurrency_limit,
                rate: self.org_rate_limit,
                burst: self.org_rate_burst,
                sessions: None,
                stdio_processes: None,
                data_source_bytes: None,
            })
        })
    }

    /// Refuses settings that contradict each other.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.max_request_timeout >= self.request_timeout,
            "SWITCHBOARD_MAX_REQUEST_TIMEOUT ({:?}) is shorter than SWITCHBOARD_REQUEST_TIMEOUT ({:?})",
            self.max_request_timeout,
            self.request_timeout
        );
        anyhow::ensure!(
            self.org_concurrency_limit > 0,
            "SWITCHBOARD_ORG_CONCURRENCY_LIMIT must be at least 1"
        );
        anyhow::ensure!(
            !self.org_slot_grant_heartbeat.is_zero()
                && self.org_slot_grant_heartbeat < self.org_slot_grant_ttl,
            "SWITCHBOARD_ORG_SLOT_GRANT_HEARTBEAT ({:?}) must be positive and shorter than SWITCHBOARD_ORG_SLOT_GRANT_TTL ({:?})",
            self.org_slot_grant_heartbeat,
            self.org_slot_grant_ttl
        );
        anyhow::ensure!(
            self.org_slot_grant_batch > 0,
            "SWITCHBOARD_ORG_SLOT_GRANT_BATCH must be at least 1"
        );
        anyhow::ensure!(
            !self.readiness_interval.is_zero() && !self.readiness_timeout.is_zero(),
            "SWITCHBOARD_READINESS_INTERVAL and SWITCHBOARD_READINESS_TIMEOUT must be positive"
        );
        self.connections.validate()?;
        self.tls.validate()
    }
}
