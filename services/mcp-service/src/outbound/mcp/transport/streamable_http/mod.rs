//! The streamable HTTP transport: rmcp's client with bounded answers, SSE
//! answers read as plain JSON, and the standalone stream awaited.

pub mod capped;
pub mod dpop;
pub mod sse_answer;
pub mod standalone_stream;

use std::collections::HashMap;

use rmcp::{
    ClientServiceExt,
    model::{ErrorCode, ProtocolVersion},
    service::{ClientInitializeError, ClientLifecycleMode},
    transport::{
        AuthClient, StreamableHttpClientTransport,
        streamable_http_client::{StreamableHttpClient, StreamableHttpClientTransportConfig},
    },
};
use secrecy::ExposeSecret;

use self::{capped::CappedHttpClient, dpop::DpopClient, standalone_stream::StandaloneStream};
use crate::{
    domain::{
        integration::{AuthConfig, ClientAuth, Integration, Secrets},
        ports::CallError,
    },
    outbound::{
        http::check_request_url,
        mcp::{
            connect::{McpConnector, lifecycle},
            sessions::{McpSession, SessionHandler},
        },
        oauth::{
            client_credentials::{AccessToken, Grant},
            dpop::DpopKey,
            on_behalf_of::{self, CallerGrant},
            token_request::Credential,
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

/// Opens a streamable HTTP session to `url` with the integration's
/// credentials (`user`'s token for a per-user integration), and the
/// session's standalone stream to await.
pub(super) async fn open(
    connector: &McpConnector,
    integration: &Integration,
    url: &str,
    user: &str,
    handler: SessionHandler,
) -> Result<(McpSession, StandaloneStream), CallError> {
    // IP literals never reach the resolver, so they are checked here; host
    // names are checked by the client's resolver on the address it dials.
    check_request_url(&connector.policy.addresses, url)
        .map_err(|e| CallError::Connect(e.to_string()))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .reinit_on_expired_session(true)
        .max_sse_event_size(connector.defaults.max_message_bytes)
        // A request's POST lasts until its answer when the server answers
        // with JSON (or with an SSE stream holding only the answer, see
        // `sse_answer`), so this cap is the session's calls in flight; the
        // server's concurrency limits bound those, not the transport.
        .max_concurrent_requests(MAX_POSTS_IN_FLIGHT);
    let standalone = StandaloneStream::default();
    let capped = CappedHttpClient::new(connector.http.clone(), standalone.clone());
    let code_flow = integration.uses_authorization_code();
    let connected = if code_flow {
        // The user's (or the organization's) token on every request,
        // refreshed as it nears expiry and once more when the server
        // refuses it.
        let (manager, dpop_key) = connector
            .flows
            .session_manager(integration, integration.grant_user(user))
            .await?;
        match dpop_key {
            // A DPoP-bound token: never sent as a bearer token.
            Some(key) => {
                let client = DpopClient::new(capped, key, connector.http.clone());
                handshake(
                    AuthClient::new(client, manager),
                    config,
                    handler,
                    integration,
                )
                .await
            }
            None => {
                handshake(
                    AuthClient::new(capped, manager),
                    config,
                    handler,
                    integration,
                )
                .await
            }
        }
    } else {
        let session = StaticSession {
            connector,
            integration,
            user,
            client: capped,
            handler,
        };
        session.connect(config).await?
    };
    let session = connected.map_err(|error| match error.auth_challenge() {
        Some(challenge) if code_flow => {
            CallError::AuthorizationRequired(Some(challenge.to_owned()))
        }
        _ => CallError::Connect(format!("MCP handshake failed: {error}")),
    })?;
    Ok((session, standalone))
}

/// A session whose credentials are the integration's own or exchanged for
/// the caller's (not the authorization code flow's).
struct StaticSession<'a> {
    connector: &'a McpConnector,
    integration: &'a Integration,
    user: &'a str,
    client: CappedHttpClient,
    handler: SessionHandler,
}

impl StaticSession<'_> {
    /// The handshake, made once more with a fresh token when the server
    /// refused a cached one (revoked or rotated before its stated expiry;
    /// the handshake did not run).
    async fn connect(
        &self,
        config: StreamableHttpClientTransportConfig,
    ) -> Result<Result<McpSession, ClientInitializeError>, CallError> {
        match self.handshake(config.clone()).await? {
            Err(ClientInitializeError::TransportError { error, .. })
                if self
                    .connector
                    .refused_token(self.integration, self.user, &error) =>
            {
                self.handshake(config).await
            }
            result => Ok(result),
        }
    }

    /// The handshake with the credentials as they are now (a cached token,
    /// or a fresh one); the error is the token's when none could be had.
    async fn handshake(
        &self,
        config: StreamableHttpClientTransportConfig,
    ) -> Result<Result<McpSession, ClientInitializeError>, CallError> {
        let (config, dpop_key) =
            static_auth(self.connector, self.integration, self.user, config).await?;
        let (client, handler) = (self.client.clone(), self.handler.clone());
        Ok(match dpop_key {
            // A DPoP-bound token: never sent as a bearer token.
            Some(key) => {
                let client = DpopClient::new(client, key, self.connector.http.clone());
                handshake(client, config, handler, self.integration).await
            }
            None => handshake(client, config, handler, self.integration).await,
        })
    }
}

/// `config` with the integration's credentials for `user`: fixed ones, or
/// a token exchanged for the caller's own; and the key the token is bound
/// to, when its authorization server bound it with DPoP.
async fn static_auth(
    connector: &McpConnector,
    integration: &Integration,
    user: &str,
    mut config: StreamableHttpClientTransportConfig,
) -> Result<(StreamableHttpClientTransportConfig, Option<DpopKey>), CallError> {
    match &integration.auth {
        AuthConfig::None | AuthConfig::OAuthAuthorizationCode(_) => {}
        AuthConfig::BearerToken => {
            let token = integration
                .secrets
                .get(Secrets::BEARER_TOKEN)
                .ok_or_else(|| CallError::Connect("the bearer token is not set".into()))?;
            config = config.auth_header(token.expose_secret().to_owned());
        }
        AuthConfig::Header { header_name } => {
            let invalid = |what: &str| CallError::Connect(what.to_owned());
            let value = integration
                .secrets
                .get(Secrets::HEADER_VALUE)
                .ok_or_else(|| invalid("the header value is not set"))?;
            let name = http::HeaderName::from_bytes(header_name.as_bytes())
                .map_err(|_| invalid("the stored header name is invalid"))?;
            let mut value = http::HeaderValue::from_str(value.expose_secret())
                .map_err(|_| invalid("the stored header value is invalid"))?;
            value.set_sensitive(true);
            config = config.custom_headers(HashMap::from([(name, value)]));
        }
        AuthConfig::OAuthClientCredentials { .. } => {
            let token = oauth_token(connector, integration, user).await?;
            config = config.auth_header(token.token.expose_secret().to_owned());
            return Ok((config, token.dpop));
        }
    }
    Ok((config, None))
}

/// The OAuth token of a client-credentials integration's session for
/// `user`: the service's own, or one exchanged for the caller's.
async fn oauth_token(
    connector: &McpConnector,
    integration: &Integration,
    user: &str,
) -> Result<AccessToken, CallError> {
    let AuthConfig::OAuthClientCredentials {
        token_url,
        client_id,
        scopes,
        client_auth,
        issuer,
        on_behalf_of,
    } = &integration.auth
    else {
        return Err(CallError::Connect(
            "the integration does not use OAuth client credentials".into(),
        ));
    };
    let credential = credential(integration, client_auth).map_err(CallError::Connect)?;
    let dpop_key = dpop_key(integration).map_err(CallError::Connect)?;
    let grant = Grant {
        integration_id: integration.id,
        mcp_url: integration.transport.url().unwrap_or_default(),
        token_url,
        issuer: issuer.as_deref(),
        client_id,
        credential,
        scopes,
        dpop_key: dpop_key.as_ref(),
    };
    if !on_behalf_of.is_caller() {
        return connector
            .tokens
            .token(&grant)
            .await
            .map_err(CallError::Connect);
    }
    let grant = CallerGrant {
        grant,
        on_behalf_of,
        org: &integration.org_id.0,
        version: integration.updated_at,
        subject: user,
    };
    let token = on_behalf_of::token(&connector.tokens, &connector.exchanged, &grant).await?;
    Ok(AccessToken { token, dpop: None })
}

/// The integration's sealed DPoP key, if it has one (an integration made
/// before they were has none, and is sent bearer tokens only).
fn dpop_key(integration: &Integration) -> Result<Option<DpopKey>, String> {
    integration
        .secrets
        .get(Secrets::OAUTH_DPOP_KEY)
        .map(|key| {
            serde_json::from_value(serde_json::Value::from(key.expose_secret()))
                .map_err(|_| "the stored DPoP key is unusable".to_owned())
        })
        .transpose()
}

/// What `integration` proves itself with at its token endpoint, by
/// `client_auth`, from its stored secrets.
fn credential<'a>(
    integration: &'a Integration,
    client_auth: &'a ClientAuth,
) -> Result<Credential<'a>, String> {
    let secret = |name: &str, what: &str| {
        integration
            .secrets
            .get(name)
            .ok_or_else(|| format!("the OAuth {what} is not set"))
    };
    Ok(match client_auth {
        ClientAuth::ClientSecretBasic => {
            Credential::SecretBasic(secret(Secrets::OAUTH_CLIENT_SECRET, "client secret")?)
        }
        ClientAuth::ClientSecretPost => {
            Credential::SecretPost(secret(Secrets::OAUTH_CLIENT_SECRET, "client secret")?)
        }
        ClientAuth::PrivateKeyJwt { algorithm } => Credential::PrivateKeyJwt {
            key: secret(Secrets::OAUTH_CLIENT_PRIVATE_KEY, "private key")?,
            algorithm,
        },
        ClientAuth::WorkloadIdentity => Credential::WorkloadIdentity,
    })
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
