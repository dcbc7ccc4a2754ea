//! Connecting to MCP servers with `rmcp`: what every session shares (how
//! mcp-service introduces itself, the connect limit), the transport's own
//! part (and its state) being in [`super::transport`], which this module
//! looks down to and never the other way.

use std::{sync::Arc, time::Duration};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitationCapability, FormElicitationCapability,
    Implementation, RootsCapabilities, SamplingCapability, TASKS_EXTENSION_ID,
};

use super::{
    sessions::{Live, SessionHandler},
    transport::{
        Opened, Transports,
        streamable_http::{HttpRoom, standalone_stream::Waited},
    },
};
use crate::{
    domain::abilities::Abilities,
    domain::{integration::Integration, ports::CallError, resolve::ConfigPolicy},
    outbound::{
        oauth::{
            authorization_code::AuthorizationCodeFlows, client_credentials::OAuthTokens,
            integration_token::IntegrationTokens, on_behalf_of::ExchangedTokens,
        },
        telemetry::SessionOpen,
    },
};

/// Default limits for integrations that set none, and size bounds.
#[derive(Debug, Clone, Copy)]
pub struct ConnectDefaults {
    /// Connection and handshake limit.
    pub connect_timeout: Duration,
    /// Per-call limit.
    pub call_timeout: Duration,
    /// Longest wait for the server to answer a new session's standalone
    /// stream (see [`super::transport::streamable_http::standalone_stream`]).
    pub standalone_stream_wait: Duration,
    /// Longest message accepted from a server (an SSE event or a stdio line).
    pub max_message_bytes: usize,
}

/// Opens MCP sessions to integrations' servers.
#[derive(Debug, Clone)]
pub struct McpConnector {
    transports: Transports,
    defaults: ConnectDefaults,
}

/// How mcp-service introduces itself to MCP servers: it answers form
/// elicitations (by the operator's policy, see [`super::elicitation`]) and
/// follows the tasks a server runs its calls as (the Tasks extension, see
/// [`crate::outbound::mcp::tasks`]); it takes sampling and roots requests
/// only on a session opened for an endpoint client that declared them
/// (`abilities`), whose client answers them.
pub fn client_config(abilities: Abilities) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    if abilities.sampling {
        capabilities.sampling = Some(SamplingCapability::default());
    }
    if abilities.roots {
        capabilities.roots = Some(RootsCapabilities::default());
    }
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
    ClientConfig::new(
        capabilities,
        Implementation::new("switchboard-mcp-service", env!("CARGO_PKG_VERSION")),
    )
}

impl McpConnector {
    /// A connector dialling with `http` (built by
    /// [`crate::outbound::http::build_client`]).
    pub fn new(
        http: reqwest::Client,
        policy: Arc<ConfigPolicy>,
        tokens: OAuthTokens,
        flows: AuthorizationCodeFlows,
        defaults: ConnectDefaults,
    ) -> Self {
        let bytes = defaults.max_message_bytes;
        let http = HttpRoom::new(http, policy.clone(), tokens, flows, bytes);
        Self {
            transports: Transports::new(http, policy, bytes),
            defaults,
        }
    }

    /// Keeps the tokens exchanged on behalf of callers in `exchanged`.
    #[must_use]
    pub fn with_exchanged_tokens(mut self, exchanged: ExchangedTokens) -> Self {
        self.transports.http = self.transports.http.with_exchanged_tokens(exchanged);
        self
    }

    /// The tokens client-credentials integrations' calls carry, shared with
    /// the gateways of other kinds of integration.
    pub fn tokens(&self) -> IntegrationTokens {
        self.transports.http.tokens().clone()
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

    /// Connects and completes the MCP handshake within the connect timeout;
    /// a streamable HTTP session of the initialize era is returned once the
    /// server has answered its standalone stream, or after at most
    /// `standalone_stream_wait` within what is left of that timeout (see
    /// [`super::transport::streamable_http::standalone_stream`]).
    /// Errors are sentences for admins and models; they never carry secrets.
    /// `user` is whom the session acts for: a per-user (OAuth) integration's
    /// session carries their token.
    pub async fn connect(
        &self,
        integration: &Integration,
        user: &str,
        handler: SessionHandler,
    ) -> Result<Live, CallError> {
        let (connect_timeout, _) = self.timeouts(integration);
        let started = tokio::time::Instant::now();
        let connecting = self.transports.open(integration, user, handler);
        let opened = tokio::time::timeout(connect_timeout, connecting)
            .await
            .map_err(|_| {
                CallError::Connect(format!("connecting timed out after {connect_timeout:?}"))
            })??;
        let Opened {
            session,
            attachment,
            standalone,
        } = opened;
        if let Some(standalone) = standalone {
            // Within what is left of the connect limit.
            let left = connect_timeout.saturating_sub(started.elapsed());
            let wait = self.defaults.standalone_stream_wait.min(left);
            if standalone.wait(wait).await == Waited::TimedOut {
                tracing::warn!(
                    integration_id = %integration.id,
                    waited_ms = wait.as_millis(),
                    "the server did not answer the session's standalone stream; using the session without it"
                );
            }
        }
        Ok(Live {
            session,
            transport: attachment,
            open: SessionOpen::new(integration.id),
        })
    }

    /// Whether `error` is the server refusing a client-credentials token
    /// with a 401 (see [`HttpRoom::refused_token`]): nothing ran, and the
    /// cached token is forgotten.
    pub fn refused_token(
        &self,
        integration: &Integration,
        user: &str,
        error: &(dyn std::error::Error + 'static),
    ) -> bool {
        self.transports.http.refused_token(integration, user, error)
    }
}
