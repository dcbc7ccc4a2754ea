//! The transports MCP sessions run over, one room each, behind the one
//! [`Transport`] enum of the domain: [`open`] is the only `match` on it in
//! the MCP client, so a new transport is a room here and an arm there.

pub mod stdio;
pub mod streamable_http;

use rmcp::model::ErrorData;
use serde_json::Value;

use self::streamable_http::standalone_stream::StandaloneStream;
use super::{
    connect::McpConnector,
    sessions::{Live, SessionHandler},
};
use crate::{
    domain::{
        integration::Integration,
        ports::CallError,
        transport::{Stdio, Transport},
    },
    outbound::telemetry::SessionOpen,
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

/// Opens a session to `integration`'s server over its transport, with
/// the standalone stream to await where the transport has one. `user` is
/// whom the session acts for.
pub(super) async fn open(
    connector: &McpConnector,
    integration: &Integration,
    user: &str,
    handler: SessionHandler,
) -> Result<(Live, Option<StandaloneStream>), CallError> {
    match &integration.transport {
        Transport::StreamableHttp(http) => {
            let (session, standalone) =
                streamable_http::open(connector, integration, &http.url, user, handler).await?;
            let live = Live {
                session,
                child: None,
                open: SessionOpen::new(integration.id),
            };
            Ok((live, Some(standalone)))
        }
        Transport::Stdio(Stdio {
            command, args, env, ..
        }) => stdio::open(connector, integration, command, args, env, handler)
            .await
            .map(|live| (live, None))
            .map_err(CallError::Connect),
    }
}
