//! The transports MCP sessions run over, one room each, behind the one
//! [`Transport`] enum of the domain. A room owns what its sessions share
//! (a stdio server's homes, the HTTP client and its credentials), what a
//! session keeps alive with it (a stdio server's process group) and what
//! its failures mean (whether a failed request provably never left).
//! [`Transports::open`] and [`Attachment`] are the only `match`es on the
//! transport in the MCP client, so a new transport is a room here and an
//! arm in each.
//!
//! Nothing here looks up to the rest of the MCP client: a session's handler
//! is any [`SessionClient`], and [`super::connect`] builds the live session
//! from what [`Transports::open`] returns.

pub mod stdio;
pub mod streamable_http;

use std::sync::Arc;

use rmcp::{
    ClientHandler, RoleClient, ServiceError,
    model::{ErrorData, ProtocolVersion},
    service::RunningService,
};
use serde_json::Value;

use self::{
    stdio::{StdioChild, StdioRoom},
    streamable_http::{HttpRoom, standalone_stream::StandaloneStream},
};
use crate::domain::{
    integration::Integration,
    ports::CallError,
    resolve::ConfigPolicy,
    transport::{Stdio, Transport},
};

/// The key in a JSON-RPC error's `data` that marks it as this client's
/// "result too large" answer (given by every transport alike).
pub const TOO_LARGE_MARKER: &str = "switchboardResultTooLarge";

/// Whether a JSON-RPC error is this client's "result too large" answer.
pub fn is_too_large(error: &ErrorData) -> bool {
    error
        .data
        .as_ref()
        .and_then(|data| data.get(TOO_LARGE_MARKER))
        .is_some_and(|marker| marker == &Value::Bool(true))
}

/// The client side of a session, as the transports need it: a handler they
/// can serve, introduced at an earlier protocol version when a server of an
/// earlier era is reached.
pub trait SessionClient: ClientHandler + Clone {
    /// This handler, introducing itself at `version` in an initialize
    /// handshake.
    #[must_use]
    fn at_version(self, version: ProtocolVersion) -> Self;
}

/// A session served over a transport.
pub type Session<H> = RunningService<RoleClient, H>;

/// What a session's transport keeps alive as long as the session, and
/// answers for when one of its requests fails.
#[derive(Debug)]
pub enum Attachment {
    /// Streamable HTTP: nothing beyond the session (its connections belong
    /// to the shared client).
    StreamableHttp,
    /// Stdio: the server's process group and home, ended when dropped.
    Stdio(StdioChild),
}

impl Attachment {
    /// Whether `error` proves the request never reached the server, so that
    /// making it again cannot run anything twice; each transport knows what
    /// its own failures prove.
    pub fn never_delivered(&self, error: &ServiceError) -> bool {
        match self {
            Self::StreamableHttp => streamable_http::never_delivered(error),
            Self::Stdio(_) => stdio::never_delivered(error),
        }
    }
}

/// A session just opened over a transport.
#[derive(Debug)]
pub struct Opened<H: SessionClient> {
    /// The session.
    pub session: Session<H>,
    /// What lives as long as it.
    pub attachment: Attachment,
    /// The standalone stream to await, where the transport has one.
    pub standalone: Option<StandaloneStream>,
}

/// Every transport's room, with what its sessions share.
#[derive(Debug, Clone)]
pub struct Transports {
    /// Streamable HTTP.
    pub http: HttpRoom,
    /// Stdio.
    pub stdio: StdioRoom,
}

impl Transports {
    /// The rooms: `http` for streamable HTTP; stdio servers under `policy`'s
    /// allow-list, in homes below its settings. `max_message_bytes` bounds
    /// a message from a server on every transport.
    pub fn new(http: HttpRoom, policy: Arc<ConfigPolicy>, max_message_bytes: usize) -> Self {
        Self {
            http,
            stdio: StdioRoom::new(policy, max_message_bytes),
        }
    }

    /// Opens a session to `integration`'s server over its transport. `user`
    /// is whom the session acts for.
    pub async fn open<H: SessionClient>(
        &self,
        integration: &Integration,
        user: &str,
        handler: H,
    ) -> Result<Opened<H>, CallError> {
        match &integration.transport {
            Transport::StreamableHttp(http) => {
                let (session, standalone) = self
                    .http
                    .open(integration, &http.url, user, handler)
                    .await?;
                Ok(Opened {
                    session,
                    attachment: Attachment::StreamableHttp,
                    standalone: Some(standalone),
                })
            }
            Transport::Stdio(Stdio {
                command, args, env, ..
            }) => {
                let (session, child) = self
                    .stdio
                    .open(integration, command, args, env, handler)
                    .await
                    .map_err(CallError::Connect)?;
                Ok(Opened {
                    session,
                    attachment: Attachment::Stdio(child),
                    standalone: None,
                })
            }
            // Served by their own gateways; never an MCP session.
            Transport::OpenApi(_) | Transport::Grpc(_) => Err(CallError::Connect(
                "an OpenAPI or gRPC integration has no MCP session".to_owned(),
            )),
        }
    }
}
