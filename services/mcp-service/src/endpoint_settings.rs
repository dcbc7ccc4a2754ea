//! The settings of the MCP endpoint: where it listens, which hosts it
//! answers to, and the bounds of its clients' sessions and requests.

use std::{net::SocketAddr, time::Duration};

use crate::domain::downstream::Downstream;

mod connections;

pub use self::connections::EndpointConnectionArgs;

/// The MCP endpoint's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct EndpointArgs {
    /// Address of the streamable HTTP MCP endpoint (`/mcp/integrations/{slug}`);
    /// unset, the endpoint is off. Off by default because it is a second
    /// public face of the service, for MCP clients outside the cluster, that
    /// an operator opens on purpose (with its allowed hosts) rather than
    /// finds open.
    #[arg(
        id = "mcp_endpoint_listen",
        long = "mcp-endpoint-listen",
        env = "SWITCHBOARD_MCP_ENDPOINT_LISTEN"
    )]
    pub listen: Option<SocketAddr>,
    /// Host names (or `host:port`) the endpoint answers to, comma-separated;
    /// a request naming another `Host` is refused (DNS rebinding). Empty
    /// lets any host through (behind an ingress that checks it).
    #[arg(
        id = "mcp_endpoint_allowed_hosts",
        long = "mcp-endpoint-allowed-hosts",
        env = "SWITCHBOARD_MCP_ENDPOINT_ALLOWED_HOSTS",
        default_value = "localhost,127.0.0.1,::1"
    )]
    pub allowed_hosts: String,
    /// Browser origins allowed to call the endpoint (`scheme://host:port`,
    /// comma-separated); a request with another `Origin` is refused.
    /// Empty: every request carrying an `Origin` is refused.
    #[arg(
        id = "mcp_endpoint_allowed_origins",
        long = "mcp-endpoint-allowed-origins",
        env = "SWITCHBOARD_MCP_ENDPOINT_ALLOWED_ORIGINS",
        default_value = ""
    )]
    pub allowed_origins: String,
    /// The endpoint's URL as MCP clients reach it (`https://mcp.example.com`),
    /// named in its OAuth protected resource metadata; unset, the URL is
    /// built from the request's (allowed) `Host` over `http`.
    #[arg(
        id = "mcp_endpoint_public_url",
        long = "mcp-endpoint-public-url",
        env = "SWITCHBOARD_MCP_ENDPOINT_PUBLIC_URL"
    )]
    pub public_url: Option<String>,
    /// Most MCP client sessions (initialize era) open at once, over all
    /// organizations.
    #[arg(
        id = "mcp_endpoint_max_sessions",
        long = "mcp-endpoint-max-sessions",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_SESSIONS",
        default_value_t = 1000
    )]
    pub max_sessions: usize,
    /// Most MCP client sessions one organization has open at once, over all
    /// replicas.
    #[arg(
        id = "mcp_endpoint_max_sessions_per_org",
        long = "mcp-endpoint-max-sessions-per-org",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_SESSIONS_PER_ORG",
        default_value_t = 100
    )]
    pub max_sessions_per_org: usize,
    /// Most long-lived streams (`subscriptions/listen`, and sessions' GET
    /// streams) open at once, over all organizations; past it 503 or a
    /// JSON-RPC error.
    #[arg(
        id = "mcp_endpoint_max_streams",
        long = "mcp-endpoint-max-streams",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS",
        default_value_t = 1000
    )]
    pub max_streams: usize,
    /// Most long-lived streams one organization has open at once; well
    /// below the endpoint's, so that the others keep room.
    #[arg(
        id = "mcp_endpoint_max_streams_per_org",
        long = "mcp-endpoint-max-streams-per-org",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS_PER_ORG",
        default_value_t = 100
    )]
    pub max_streams_per_org: usize,
    /// Most GET streams one MCP client session has open at once; past it
    /// 409.
    #[arg(
        id = "mcp_endpoint_max_streams_per_session",
        long = "mcp-endpoint-max-streams-per-session",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS_PER_SESSION",
        default_value_t = 2
    )]
    pub max_streams_per_session: usize,
    /// How long an MCP client session may stay idle before it is closed.
    #[arg(id = "mcp_endpoint_session_idle_timeout", long = "mcp-endpoint-session-idle-timeout", env = "SWITCHBOARD_MCP_ENDPOINT_SESSION_IDLE_TIMEOUT", default_value = "10m", value_parser = humantime::parse_duration)]
    pub session_idle_timeout: Duration,
    /// Largest request body the endpoint reads, in bytes; past it 413.
    #[arg(id = "mcp_endpoint_max_body_bytes", long = "mcp-endpoint-max-body-bytes", env = "SWITCHBOARD_MCP_ENDPOINT_MAX_BODY_BYTES", default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// Most list changes of servers held for a client session that has not
    /// passed them on yet; one that falls further behind is told that every
    /// list may have changed.
    #[arg(
        id = "mcp_endpoint_change_buffer",
        long = "mcp-endpoint-change-buffer",
        env = "SWITCHBOARD_MCP_ENDPOINT_CHANGE_BUFFER",
        default_value_t = 256
    )]
    pub change_buffer: usize,
    /// Most elicitations of servers waiting for one client's call to
    /// answer; one more is answered by `SWITCHBOARD_ELICITATION`.
    #[arg(
        id = "mcp_endpoint_max_pending_elicitations",
        long = "mcp-endpoint-max-pending-elicitations",
        env = "SWITCHBOARD_MCP_ENDPOINT_MAX_PENDING_ELICITATIONS",
        default_value_t = 4
    )]
    pub max_pending_elicitations: usize,
    /// Most log messages and resource updates of servers held for one
    /// client session that has not passed them on yet; one more is dropped.
    #[arg(
        id = "mcp_endpoint_notice_buffer",
        long = "mcp-endpoint-notice-buffer",
        env = "SWITCHBOARD_MCP_ENDPOINT_NOTICE_BUFFER",
        default_value_t = 64
    )]
    pub notice_buffer: usize,
    /// Bounds of the endpoint's connections: timeouts, caps, HTTP/2 limits.
    #[command(flatten)]
    pub connections: EndpointConnectionArgs,
}

impl Default for EndpointArgs {
    fn default() -> Self {
        Self {
            listen: None,
            allowed_hosts: "localhost,127.0.0.1,::1".to_owned(),
            allowed_origins: String::new(),
            public_url: None,
            max_sessions: 1000,
            max_sessions_per_org: 100,
            max_streams: 1000,
            max_streams_per_org: 100,
            max_streams_per_session: 2,
            session_idle_timeout: Duration::from_secs(600),
            max_body_bytes: 4 << 20,
            change_buffer: 256,
            max_pending_elicitations: 4,
            notice_buffer: 64,
            connections: EndpointConnectionArgs::default(),
        }
    }
}

impl EndpointArgs {
    /// The allowed hosts, trimmed, empty entries dropped.
    pub fn allowed_hosts(&self) -> Vec<String> {
        list(&self.allowed_hosts)
    }

    /// The allowed origins, trimmed, empty entries dropped.
    pub fn allowed_origins(&self) -> Vec<String> {
        list(&self.allowed_origins)
    }

    /// Where servers' list changes, questions and notices wait for the endpoint's
    /// clients, within these bounds.
    pub fn downstream(&self) -> Downstream {
        Downstream::new(
            self.change_buffer,
            self.max_pending_elicitations,
            self.notice_buffer,
        )
    }

    /// Refuses settings the endpoint cannot run with.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.max_sessions > 0,
            "SWITCHBOARD_MCP_ENDPOINT_MAX_SESSIONS must be at least 1"
        );
        anyhow::ensure!(
            self.max_sessions_per_org > 0,
            "SWITCHBOARD_MCP_ENDPOINT_MAX_SESSIONS_PER_ORG must be at least 1"
        );
        anyhow::ensure!(
            self.max_streams_per_org > 0 && self.max_streams_per_session > 0,
            "SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS_PER_ORG and _MAX_STREAMS_PER_SESSION must be at least 1"
        );
        anyhow::ensure!(
            self.max_streams >= self.max_streams_per_org,
            "SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS must be at least SWITCHBOARD_MCP_ENDPOINT_MAX_STREAMS_PER_ORG"
        );
        anyhow::ensure!(
            self.max_body_bytes >= 1024,
            "SWITCHBOARD_MCP_ENDPOINT_MAX_BODY_BYTES must be at least 1024"
        );
        anyhow::ensure!(
            self.change_buffer > 0,
            "SWITCHBOARD_MCP_ENDPOINT_CHANGE_BUFFER must be at least 1"
        );
        anyhow::ensure!(
            self.max_pending_elicitations > 0,
            "SWITCHBOARD_MCP_ENDPOINT_MAX_PENDING_ELICITATIONS must be at least 1"
        );
        anyhow::ensure!(
            self.notice_buffer > 0,
            "SWITCHBOARD_MCP_ENDPOINT_NOTICE_BUFFER must be at least 1"
        );
        anyhow::ensure!(
            !self.session_idle_timeout.is_zero(),
            "SWITCHBOARD_MCP_ENDPOINT_SESSION_IDLE_TIMEOUT must be more than zero"
        );
        if let Some(entry) = self
            .allowed_hosts()
            .into_iter()
            .find(|entry| !crate::inbound::mcp_server::is_host_entry(entry))
        {
            anyhow::bail!(
                "SWITCHBOARD_MCP_ENDPOINT_ALLOWED_HOSTS: `{entry}` is not a host or host:port"
            );
        }
        self.connections.validate()?;
        if let Some(url) = &self.public_url {
            let parsed = url::Url::parse(url)
                .map_err(|e| anyhow::anyhow!("SWITCHBOARD_MCP_ENDPOINT_PUBLIC_URL: {e}"))?;
            anyhow::ensure!(
                matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some(),
                "SWITCHBOARD_MCP_ENDPOINT_PUBLIC_URL must be an http(s) URL with a host"
            );
        }
        Ok(())
    }
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser as _};

    use crate::Config;

    #[test]
    fn an_organizations_stream_cap_fits_within_the_endpoints() {
        let defaults = super::EndpointArgs::default();
        assert!(defaults.validate().is_ok());
        assert!(
            defaults.max_streams_per_org * 10 <= defaults.max_streams,
            "one organization at its cap leaves the others room"
        );
        let wider = super::EndpointArgs {
            max_streams: 10,
            max_streams_per_org: 11,
            ..super::EndpointArgs::default()
        };
        assert!(wider.validate().is_err());
        let none = super::EndpointArgs {
            max_streams_per_session: 0,
            ..super::EndpointArgs::default()
        };
        assert!(none.validate().is_err());
    }

    #[test]
    fn the_endpoint_settings_parse_beside_the_others() {
        Config::command().debug_assert();
        let config = Config::try_parse_from([
            "mcp-service",
            "--mcp-endpoint-listen=127.0.0.1:8080",
            "--mcp-endpoint-max-sessions=7",
            "--max-sessions=9",
        ])
        .expect("parses");
        assert_eq!(config.endpoint.listen, Some(([127, 0, 0, 1], 8080).into()));
        assert_eq!(config.endpoint.max_sessions, 7);
        assert_eq!(config.max_sessions, 9);
        assert!(config.endpoint.validate().is_ok());
        assert_eq!(config.endpoint.notice_buffer, 64, "the default");
        let none = Config::try_parse_from(["mcp-service", "--mcp-endpoint-notice-buffer=0"])
            .expect("parses");
        assert!(
            none.endpoint.validate().is_err(),
            "a session that could hold no notice is refused"
        );
    }
}
