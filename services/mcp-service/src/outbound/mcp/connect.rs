//! Connecting to MCP servers with `rmcp`: what every session shares (how
//! mcp-service introduces itself, the lifecycle, the connect limit), the
//! transport's own part being in [`super::transport`].

use std::{sync::Arc, time::Duration};

use rmcp::{
    model::{
        ClientCapabilities, ClientConfig, ElicitationCapability, FormElicitationCapability,
        Implementation, ProtocolVersion, RootsCapabilities, SamplingCapability, TASKS_EXTENSION_ID,
    },
    service::ClientLifecycleMode,
    transport::streamable_http_client::AuthRequiredError,
};

use super::{
    sessions::{Live, SessionHandler},
    transport::{self, stdio::home::StdioHomes, streamable_http::standalone_stream::Waited},
};
use crate::{
    domain::abilities::Abilities,
    domain::{
        integration::{AuthConfig, Integration},
        ports::CallError,
        resolve::ConfigPolicy,
    },
    outbound::oauth::{
        authorization_code::AuthorizationCodeFlows, client_credentials::OAuthTokens,
        on_behalf_of::ExchangedTokens,
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
    pub(super) http: reqwest::Client,
    pub(super) policy: Arc<ConfigPolicy>,
    pub(super) tokens: OAuthTokens,
    pub(super) exchanged: ExchangedTokens,
    pub(super) flows: AuthorizationCodeFlows,
    pub(super) defaults: ConnectDefaults,
    pub(super) homes: StdioHomes,
}

/// The lifecycle a session is opened with first: the newest protocol
/// through `server/discover`. A server of an earlier era is then reached
/// with the initialize handshake (see
/// [`super::transport::streamable_http`]).
pub fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::LATEST],
    }
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
        let homes = StdioHomes::new(policy.stdio.child_settings());
        Self {
            http,
            policy,
            tokens,
            exchanged: ExchangedTokens::default(),
            flows,
            defaults,
            homes,
        }
    }

    /// Keeps the tokens exchanged on behalf of callers in `exchanged`.
    #[must_use]
    pub fn with_exchanged_tokens(mut self, exchanged: ExchangedTokens) -> Self {
        self.exchanged = exchanged;
        self
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
        let connecting = transport::open(self, integration, user, handler);
        let (live, standalone) = tokio::time::timeout(connect_timeout, connecting)
            .await
            .map_err(|_| {
                CallError::Connect(format!("connecting timed out after {connect_timeout:?}"))
            })??;
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
        Ok(live)
    }

    /// Whether `error` is the server refusing a client-credentials token
    /// with a 401, in which case the cached token is forgotten. A 401 means
    /// the server refused the request before running anything, so it is
    /// safe to make once more with a fresh token.
    /// `user` is whom the session acts for: the caller whose exchanged
    /// token is forgotten, for an integration acting on their behalf.
    pub fn refused_token(
        &self,
        integration: &Integration,
        user: &str,
        error: &(dyn std::error::Error + 'static),
    ) -> bool {
        if !matches!(integration.auth, AuthConfig::OAuthClientCredentials { .. }) {
            return false;
        }
        let mut source = Some(error);
        let mut refused = false;
        while let Some(current) = source {
            if current.is::<AuthRequiredError>() {
                refused = true;
                break;
            }
            source = current.source();
        }
        if refused {
            tracing::info!(integration_id = %integration.id, "token refused with 401; fetching a new one");
            if integration.acts_for_caller() {
                self.exchanged.invalidate(integration.id, user);
            } else {
                self.tokens.invalidate(integration.id);
            }
        }
        refused
    }
}
