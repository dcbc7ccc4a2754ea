//! Connecting to MCP servers with `rmcp`: streamable HTTP through the
//! policy-enforcing HTTP client, or an allow-listed stdio child process with
//! exactly the integration's environment.

use std::{collections::HashMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::{
    ClientServiceExt, RoleClient, ServiceExt,
    model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion},
    service::{ClientLifecycleMode, RunningService},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use secrecy::ExposeSecret;
use tokio::time::Instant;

use super::{
    http_client::check_request_url,
    oauth::{Grant, OAuthTokens},
};
use crate::domain::{
    integration::{AuthConfig, Integration, Secrets, TransportConfig},
    ports::{McpProbe, ProbeReport, ServerIdentity},
    resolve::ConfigPolicy,
};

/// A live MCP client session.
pub type McpSession = RunningService<RoleClient, ClientConfig>;

/// Default limits for integrations that set none.
#[derive(Debug, Clone, Copy)]
pub struct ConnectDefaults {
    /// Connection and handshake limit.
    pub connect_timeout: Duration,
    /// Per-call limit.
    pub call_timeout: Duration,
}

/// Opens MCP sessions to integrations' servers.
#[derive(Debug, Clone)]
pub struct McpConnector {
    http: reqwest::Client,
    policy: Arc<ConfigPolicy>,
    tokens: OAuthTokens,
    defaults: ConnectDefaults,
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("switchboard-mcp-service", env!("CARGO_PKG_VERSION")),
    )
}

impl McpConnector {
    /// A connector dialling with `http` (built by [`super::http_client::build_client`]).
    pub fn new(
        http: reqwest::Client,
        policy: Arc<ConfigPolicy>,
        tokens: OAuthTokens,
        defaults: ConnectDefaults,
    ) -> Self {
        Self {
            http,
            policy,
            tokens,
            defaults,
        }
    }

    /// The limits of `integration`.
    pub fn timeouts(&self, integration: &Integration) -> (Duration, Duration) {
        (
            integration
                .timeouts
                .connect_or(self.defaults.connect_timeout),
            integration.timeouts.call_or(self.defaults.call_timeout),
        )
    }

    /// Connects and completes the MCP handshake within the connect timeout.
    /// Errors are sentences for admins and models; they never carry secrets.
    pub async fn connect(&self, integration: &Integration) -> Result<McpSession, String> {
        let (connect_timeout, _) = self.timeouts(integration);
        let connecting = async {
            match &integration.transport {
                TransportConfig::StreamableHttp { url } => {
                    self.connect_http(integration, url).await
                }
                TransportConfig::Stdio {
                    command, args, env, ..
                } => self.connect_stdio(integration, command, args, env).await,
            }
        };
        tokio::time::timeout(connect_timeout, connecting)
            .await
            .map_err(|_| format!("connecting timed out after {connect_timeout:?}"))?
    }

    async fn connect_http(
        &self,
        integration: &Integration,
        url: &str,
    ) -> Result<McpSession, String> {
        // IP literals never reach the resolver, so they are checked here; host
        // names are checked by the client's resolver on the address it dials.
        check_request_url(&self.policy.addresses, url).map_err(|e| e.to_string())?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
            .reinit_on_expired_session(true);
        match &integration.auth {
            AuthConfig::None => {}
            AuthConfig::BearerToken => {
                let token = integration
                    .secrets
                    .get(Secrets::BEARER_TOKEN)
                    .ok_or("the bearer token is not set")?;
                config = config.auth_header(token.expose_secret().to_owned());
            }
            AuthConfig::Header { header_name } => {
                let value = integration
                    .secrets
                    .get(Secrets::HEADER_VALUE)
                    .ok_or("the header value is not set")?;
                let name = http::HeaderName::from_bytes(header_name.as_bytes())
                    .map_err(|_| "the stored header name is invalid")?;
                let mut value = http::HeaderValue::from_str(value.expose_secret())
                    .map_err(|_| "the stored header value is invalid")?;
                value.set_sensitive(true);
                config = config.custom_headers(HashMap::from([(name, value)]));
            }
            AuthConfig::OAuthClientCredentials {
                token_url,
                client_id,
                scopes,
            } => {
                let client_secret = integration
                    .secrets
                    .get(Secrets::OAUTH_CLIENT_SECRET)
                    .ok_or("the OAuth client secret is not set")?;
                let token = self
                    .tokens
                    .token(&Grant {
                        integration_id: integration.id,
                        token_url,
                        client_id,
                        client_secret,
                        scopes,
                    })
                    .await?;
                config = config.auth_header(token.expose_secret().to_owned());
            }
        }
        let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
        client_config()
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::LATEST],
                    legacy_version: None,
                },
            )
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))
    }

    async fn connect_stdio(
        &self,
        integration: &Integration,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<McpSession, String> {
        // The allow-list may have shrunk since the integration was saved.
        if !self.policy.stdio.allows(command) {
            return Err(format!("`{command}` is not on the stdio allow-list"));
        }
        let mut process = tokio::process::Command::new(command);
        process
            .args(args)
            // Exactly the integration's environment, none of the service's.
            .env_clear()
            .envs(env)
            .envs(
                integration
                    .secrets
                    .env()
                    .map(|(name, value)| (name, value.expose_secret())),
            )
            .kill_on_drop(true);
        let transport = TokioChildProcess::new(process)
            .map_err(|e| format!("failed to start `{command}`: {e}"))?;
        client_config()
            .serve(transport)
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))
    }
}

#[async_trait]
impl McpProbe for McpConnector {
    async fn probe(&self, integration: &Integration) -> ProbeReport {
        let started = Instant::now();
        let mut report = ProbeReport::default();
        match self.connect(integration).await {
            Err(error) => report.error = Some(error),
            Ok(session) => {
                let (_, call_timeout) = self.timeouts(integration);
                if let Err(error) = list_counts(&session, call_timeout, &mut report).await {
                    report.error = Some(error);
                }
                let _ = session.cancel().await;
            }
        }
        report.latency = started.elapsed();
        report
    }
}

async fn list_counts(
    session: &McpSession,
    call_timeout: Duration,
    report: &mut ProbeReport,
) -> Result<(), String> {
    let info = session
        .peer_info()
        .ok_or("the server sent no initialize result")?;
    let implementation = info.server_info.clone().unwrap_or_default();
    report.server = Some(ServerIdentity {
        name: implementation.name,
        title: implementation.title,
        version: implementation.version,
        protocol_version: info.protocol_version.to_string(),
        instructions: info.instructions.clone(),
    });
    let capabilities = &info.capabilities;
    let listing = async {
        if capabilities.tools.is_some() {
            report.tool_count = session.list_all_tools().await?.len();
        }
        if capabilities.resources.is_some() {
            report.resource_count = session.list_all_resources().await?.len();
            report.resource_template_count = session.list_all_resource_templates().await?.len();
        }
        if capabilities.prompts.is_some() {
            report.prompt_count = session.list_all_prompts().await?.len();
        }
        Ok::<_, rmcp::ServiceError>(())
    };
    tokio::time::timeout(call_timeout, listing)
        .await
        .map_err(|_| format!("listing capabilities timed out after {call_timeout:?}"))?
        .map_err(|e| format!("listing capabilities failed: {e}"))
}
