//! Connecting to MCP servers with `rmcp`: streamable HTTP through the
//! policy-enforcing HTTP client, or an allow-listed stdio child process with
//! exactly the integration's environment.

use std::{collections::HashMap, sync::Arc, time::Duration};

use process_wrap::tokio::{KillOnDrop, ProcessGroup};
use rmcp::{
    ClientServiceExt, ServiceExt,
    model::{
        ClientCapabilities, ClientConfig, ElicitationCapability, ErrorCode,
        FormElicitationCapability, Implementation, ProtocolVersion, TASKS_EXTENSION_ID,
    },
    service::{ClientInitializeError, ClientLifecycleMode},
    transport::{
        AuthClient, StreamableHttpClientTransport,
        async_rw::AsyncRwTransport,
        streamable_http_client::{
            AuthRequiredError, StreamableHttpClient, StreamableHttpClientTransportConfig,
        },
    },
};
use secrecy::ExposeSecret;

use crate::domain::{
    integration::{AuthConfig, Integration, Secrets, TransportConfig},
    ports::CallError,
    resolve::ConfigPolicy,
};
use crate::outbound::{
    http::check_request_url,
    mcp::sessions::{Live, McpSession, SessionHandler, StdioChild},
    mcp::transport::stdio::child::{self, Launch},
    mcp::transport::stdio::home::StdioHomes,
    mcp::transport::stdio::lines::OversizeAnswering,
    mcp::transport::streamable_http::capped::CappedHttpClient,
    mcp::transport::streamable_http::standalone_stream::{StandaloneStream, Waited},
    oauth::authorization_code::AuthorizationCodeFlows,
    oauth::client_credentials::{Grant, OAuthTokens},
    telemetry::SessionOpen,
};

/// Requests one streamable HTTP session may have awaiting their answer at
/// once (rmcp's default is 16, which would queue a busy shared session's
/// calls behind each other).
const MAX_POSTS_IN_FLIGHT: usize = 1024;

/// Default limits for integrations that set none, and size bounds.
#[derive(Debug, Clone, Copy)]
pub struct ConnectDefaults {
    /// Connection and handshake limit.
    pub connect_timeout: Duration,
    /// Per-call limit.
    pub call_timeout: Duration,
    /// Longest wait for the server to answer a new session's standalone
    /// stream (see [`crate::outbound::mcp::transport::streamable_http::standalone_stream`]).
    pub standalone_stream_wait: Duration,
    /// Longest message accepted from a server (an SSE event or a stdio line).
    pub max_message_bytes: usize,
}

/// Opens MCP sessions to integrations' servers.
#[derive(Debug, Clone)]
pub struct McpConnector {
    http: reqwest::Client,
    policy: Arc<ConfigPolicy>,
    tokens: OAuthTokens,
    flows: AuthorizationCodeFlows,
    defaults: ConnectDefaults,
    homes: StdioHomes,
}

/// The lifecycle a session is opened with first: the newest protocol
/// through `server/discover`. A server of an earlier era is then reached
/// with the initialize handshake (see [`handshake`]).
pub fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::LATEST],
    }
}

/// The protocol version of the initialize handshake with a server of an
/// earlier era: the newest of the initialize era.
const LEGACY_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How mcp-service introduces itself to MCP servers: it answers form
/// elicitations (by the operator's policy, see [`crate::outbound::mcp::elicitation`]) and
/// follows the tasks a server runs its calls as (the Tasks extension, see
/// [`crate::outbound::mcp::tasks`]).
pub fn client_config() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
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
    /// A connector dialling with `http` (built by [`crate::outbound::http::build_client`]).
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
            flows,
            defaults,
            homes,
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

    /// Connects and completes the MCP handshake within the connect timeout;
    /// a streamable HTTP session of the initialize era is returned once the
    /// server has answered its standalone stream, or after at most
    /// `standalone_stream_wait` within what is left of that timeout (see
    /// [`crate::outbound::mcp::transport::streamable_http::standalone_stream`]).
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
        let connecting = async {
            match &integration.transport {
                TransportConfig::StreamableHttp { url } => {
                    let (session, standalone) =
                        self.connect_http(integration, url, user, handler).await?;
                    let live = Live {
                        session,
                        child: None,
                        open: SessionOpen::new(integration.id),
                    };
                    Ok((live, Some(standalone)))
                }
                TransportConfig::Stdio {
                    command, args, env, ..
                } => self
                    .connect_stdio(integration, command, args, env, handler)
                    .await
                    .map(|live| (live, None))
                    .map_err(CallError::Connect),
            }
        };
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

    async fn connect_http(
        &self,
        integration: &Integration,
        url: &str,
        user: &str,
        handler: SessionHandler,
    ) -> Result<(McpSession, StandaloneStream), CallError> {
        // IP literals never reach the resolver, so they are checked here; host
        // names are checked by the client's resolver on the address it dials.
        check_request_url(&self.policy.addresses, url)
            .map_err(|e| CallError::Connect(e.to_string()))?;
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
            .reinit_on_expired_session(true)
            .max_sse_event_size(self.defaults.max_message_bytes)
            // A request's POST lasts until its answer when the server answers
            // with JSON (or with an SSE stream holding only the answer, see
            // `sse_answer`), so this cap is the session's calls in flight; the
            // server's concurrency limits bound those, not the transport.
            .max_concurrent_requests(MAX_POSTS_IN_FLIGHT);
        let standalone = StandaloneStream::default();
        let capped = CappedHttpClient::new(self.http.clone(), standalone.clone());
        let code_flow = integration.uses_authorization_code();
        let connected = if code_flow {
            // The user's (or the organization's) token on every request,
            // refreshed as it nears expiry and once more when the server
            // refuses it.
            let manager = self
                .flows
                .session_manager(integration, integration.grant_user(user))
                .await?;
            handshake(
                AuthClient::new(capped, manager),
                config,
                handler,
                integration,
            )
            .await
        } else {
            let attempt = |config| async {
                let config = self
                    .static_auth(integration, config)
                    .await
                    .map_err(CallError::Connect)?;
                Ok::<_, CallError>(
                    handshake(capped.clone(), config, handler.clone(), integration).await,
                )
            };
            match attempt(config.clone()).await? {
                // A cached token revoked or rotated before its stated expiry:
                // once more with a fresh one (the handshake did not run).
                Err(ClientInitializeError::TransportError { error, .. })
                    if self.refused_token(integration, &error) =>
                {
                    attempt(config).await?
                }
                result => result,
            }
        };
        let session = connected.map_err(|error| match error.auth_challenge() {
            Some(challenge) if code_flow => {
                CallError::AuthorizationRequired(Some(challenge.to_owned()))
            }
            _ => CallError::Connect(format!("MCP handshake failed: {error}")),
        })?;
        Ok((session, standalone))
    }

    /// Whether `error` is the server refusing a client-credentials token
    /// with a 401, in which case the cached token is forgotten. A 401 means
    /// the server refused the request before running anything, so it is
    /// safe to make once more with a fresh token.
    pub fn refused_token(
        &self,
        integration: &Integration,
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
            self.tokens.invalidate(integration.id);
        }
        refused
    }

    /// `config` with the integration's fixed credentials.
    async fn static_auth(
        &self,
        integration: &Integration,
        mut config: StreamableHttpClientTransportConfig,
    ) -> Result<StreamableHttpClientTransportConfig, String> {
        match &integration.auth {
            AuthConfig::None | AuthConfig::OAuthAuthorizationCode(_) => {}
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
        Ok(config)
    }

    async fn connect_stdio(
        &self,
        integration: &Integration,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        handler: SessionHandler,
    ) -> Result<Live, String> {
        // The allow-list may have changed since the integration was saved.
        let refusals = self.policy.stdio.check(
            command,
            args,
            env.keys().map(String::as_str),
            integration.secrets.env().map(|(name, _)| name),
        );
        if let Some(refusal) = refusals.first() {
            return Err(format!(
                "the stdio allow-list refuses `{command}`: {} {}",
                refusal.field, refusal.reason
            ));
        }
        let settings = self.policy.stdio.child_settings();
        let home = self.homes.create(&integration.org_id).await?;
        let launch = Launch {
            command,
            args,
            env,
            secrets: &integration.secrets,
            home: &home,
        };
        let mut process = child::command(launch, settings);
        // Its own process group, so closing the session kills whatever the
        // server started too.
        process.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        child::protect_service();
        let mut child = process
            .spawn()
            .map_err(|e| format!("failed to start `{command}`: {e}"))?;
        child::confine(&*child, settings)?;
        let (Some(stdout), Some(stdin)) = (child.stdout().take(), child.stdin().take()) else {
            return Err(format!("`{command}` started without pipes"));
        };
        let process = Arc::new(std::sync::Mutex::new(child));
        home.watch(&process);
        let child = StdioChild { process, home };
        // Bounded lines: a server cannot make us buffer without limit.
        let stdout = OversizeAnswering::new(stdout, self.defaults.max_message_bytes);
        let transport = AsyncRwTransport::new_client(stdout, stdin)
            .with_max_line_length(self.defaults.max_message_bytes);
        let session = handler
            .serve(transport)
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))?;
        Ok(Live {
            session,
            child: Some(child),
            open: SessionOpen::new(integration.id),
        })
    }
}

/// Opens a session over `client`, the lifecycle chosen per server as the
/// specification says: `server/discover` first (the stateless protocol of
/// 2026-07-28, headers and `_meta` on every request), the initialize
/// handshake, on a fresh connection, when the server answers as a server of
/// an earlier version.
///
/// rmcp's own `Auto` lifecycle also falls back when `server/discover` is not
/// answered within a fixed 10 s, and does so on the same transport: on a
/// busy machine a modern server answering later had its late discover
/// answer read as the answer to the initialize that followed, and the
/// session failed ("conflict initialized response id"). A server of any era
/// answers `server/discover` (a server of an earlier era with an error, as
/// JSON-RPC requires), so the probe here waits for that answer, within the
/// connect limit.
async fn handshake<C>(
    client: C,
    config: StreamableHttpClientTransportConfig,
    handler: SessionHandler,
    integration: &Integration,
) -> Result<McpSession, ClientInitializeError>
where
    C: StreamableHttpClient + Clone + Send + Sync + 'static,
{
    let connect = |handler: SessionHandler, lifecycle| {
        let transport = StreamableHttpClientTransport::with_client(client.clone(), config.clone());
        handler.serve_with_lifecycle(transport, lifecycle)
    };
    let earlier_era = match connect(handler.clone(), lifecycle()).await {
        // Some servers of an earlier version answer `server/discover` with
        // an empty result instead of an error.
        Err(ClientInitializeError::ExpectedInitResult(_)) => {
            "server/discover answered without a discover result"
        }
        // A JSON-RPC error that is not one of 2026-07-28's own refusals:
        // the server is of an earlier era (as rmcp classifies it).
        Err(ClientInitializeError::JsonRpcError(error))
            if error.code != ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                && error.code != ErrorCode::HEADER_MISMATCH =>
        {
            "server/discover refused"
        }
        result => return result,
    };
    tracing::debug!(integration_id = %integration.id, reason = earlier_era, "using initialize");
    let handler = handler.with_protocol_version(LEGACY_VERSION);
    connect(handler, ClientLifecycleMode::Initialize).await
}
