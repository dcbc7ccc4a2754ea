//! The streamable HTTP transport: rmcp's client with bounded answers, SSE
//! answers read as plain JSON, and the standalone stream awaited. The room
//! owns the outbound HTTP client and the tokens its sessions carry
//! ([`auth`]).

pub mod auth;
pub mod capped;
pub mod dpop;
pub mod sse_answer;
pub mod standalone_stream;
pub mod upstream_trace;

use std::sync::Arc;

use rmcp::{
    ClientServiceExt, ServiceError,
    model::{ErrorCode, ProtocolVersion},
    service::{ClientInitializeError, ClientLifecycleMode},
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::{
            StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
        },
    },
};

use self::{auth::Carrier, capped::CappedHttpClient, standalone_stream::StandaloneStream};
use super::{Session, SessionClient};
use crate::{
    domain::{integration::Integration, ports::CallError, resolve::ConfigPolicy},
    outbound::{
        http::check_request_url,
        oauth::{
            authorization_code::AuthorizationCodeFlows, client_credentials::OAuthTokens,
            integration_token::IntegrationTokens, on_behalf_of::ExchangedTokens,
        },
    },
};

/// Requests one streamable HTTP session may have awaiting their answer at
/// once (rmcp's default is 16, which would queue a busy shared session's
/// calls behind each other).
const MAX_POSTS_IN_FLIGHT: usize = 1024;

/// The protocol version of the initialize handshake with a server of an
/// earlier era: the newest of the initialize era.
const LEGACY_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// What every streamable HTTP session shares: the outbound HTTP client
/// (built by [`crate::outbound::http::build_client`]), the address policy,
/// the tokens, and the longest SSE event accepted.
#[derive(Debug, Clone)]
pub struct HttpRoom {
    http: reqwest::Client,
    policy: Arc<ConfigPolicy>,
    tokens: IntegrationTokens,
    flows: AuthorizationCodeFlows,
    max_event_bytes: usize,
}

/// The lifecycle a session is opened with first: the newest protocol
/// through `server/discover`. A server of an earlier era is then reached
/// with the initialize handshake (see [`handshake`]).
pub fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::LATEST],
    }
}

/// Whether `error` proves the request never reached the server: the
/// connection to it could not be opened. A closed stream, a reset or a
/// timeout may all come after the server got the request.
pub fn never_delivered(error: &ServiceError) -> bool {
    let ServiceError::TransportSend(error) = error else {
        return false;
    };
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::Client(error)) => error.is_connect(),
        _ => false,
    }
}

impl HttpRoom {
    /// The room dialling with `http` under `policy`'s address policy, its
    /// sessions carrying `tokens` and `flows`' grants.
    pub fn new(
        http: reqwest::Client,
        policy: Arc<ConfigPolicy>,
        tokens: OAuthTokens,
        flows: AuthorizationCodeFlows,
        max_event_bytes: usize,
    ) -> Self {
        Self {
            http,
            policy,
            tokens: IntegrationTokens::new(tokens, ExchangedTokens::default()),
            flows,
            max_event_bytes,
        }
    }

    /// The tokens client-credentials integrations' calls carry.
    pub fn tokens(&self) -> &IntegrationTokens {
        &self.tokens
    }

    /// Keeps the tokens exchanged on behalf of callers in `exchanged`.
    #[must_use]
    pub fn with_exchanged_tokens(mut self, exchanged: ExchangedTokens) -> Self {
        self.tokens = self.tokens.with_exchanged(exchanged);
        self
    }

    /// Opens a streamable HTTP session to `url` with the integration's
    /// credentials (`user`'s token for a per-user integration), and the
    /// session's standalone stream to await.
    pub(super) async fn open<H: SessionClient>(
        &self,
        integration: &Integration,
        url: &str,
        user: &str,
        handler: H,
    ) -> Result<(Session<H>, StandaloneStream), CallError> {
        // IP literals never reach the resolver, so they are checked here;
        // host names are checked by the client's resolver on the address it
        // dials.
        check_request_url(&self.policy.addresses, url)
            .map_err(|e| CallError::Connect(e.to_string()))?;
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
            .reinit_on_expired_session(true)
            .max_sse_event_size(self.max_event_bytes)
            // A request's POST lasts until its answer when the server answers
            // with JSON (or with an SSE stream holding only the answer, see
            // `sse_answer`), so this cap is the session's calls in flight;
            // the server's concurrency limits bound those, not the transport.
            .max_concurrent_requests(MAX_POSTS_IN_FLIGHT);
        let standalone = StandaloneStream::default();
        let capped = CappedHttpClient::new(self.http.clone(), standalone.clone());
        let code_flow = integration.uses_authorization_code();
        let connected = if code_flow {
            // The user's (or the organization's) token on every request,
            // refreshed as it nears expiry and once more when the server
            // refuses it.
            let (manager, dpop, _) = self
                .flows
                .session_manager(integration, integration.grant_user(user))
                .await?;
            let carrier = Carrier {
                manager: Some(manager),
                dpop,
            };
            self.handshake_as(capped, carrier, config, handler, integration)
                .await
        } else {
            self.static_handshake(integration, user, capped, config, handler)
                .await?
        };
        let session = connected.map_err(|error| match error.auth_challenge() {
            Some(challenge) if code_flow => {
                CallError::AuthorizationRequired(Some(challenge.to_owned()))
            }
            _ => CallError::Connect(format!("MCP handshake failed: {error}")),
        })?;
        Ok((session, standalone))
    }

    /// The handshake with credentials that are the integration's own or
    /// exchanged for the caller's (not the authorization code flow's), made
    /// once more with a fresh token when the server refused a cached one
    /// (revoked or rotated before its stated expiry; the handshake did not
    /// run).
    async fn static_handshake<H: SessionClient>(
        &self,
        integration: &Integration,
        user: &str,
        capped: CappedHttpClient,
        config: StreamableHttpClientTransportConfig,
        handler: H,
    ) -> Result<Result<Session<H>, ClientInitializeError>, CallError> {
        let mut retried = false;
        loop {
            // The credentials as they are now (a cached token, or a fresh
            // one); the error is the token's when none could be had.
            let (authorized, dpop) = self.static_auth(integration, user, config.clone()).await?;
            let carrier = Carrier {
                manager: None,
                dpop,
            };
            let result = self
                .handshake_as(
                    capped.clone(),
                    carrier,
                    authorized,
                    handler.clone(),
                    integration,
                )
                .await;
            match result {
                Err(ClientInitializeError::TransportError { error, .. })
                    if !retried && self.refused_token(integration, user, &error) =>
                {
                    retried = true;
                }
                result => return Ok(result),
            }
        }
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
async fn handshake<C, H>(
    client: C,
    config: StreamableHttpClientTransportConfig,
    handler: H,
    integration: &Integration,
) -> Result<Session<H>, ClientInitializeError>
where
    C: StreamableHttpClient + Clone + Send + Sync + 'static,
    H: SessionClient,
{
    let connect = |handler: H, lifecycle| {
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
    let handler = handler.at_version(LEGACY_VERSION);
    connect(handler, ClientLifecycleMode::Initialize).await
}
