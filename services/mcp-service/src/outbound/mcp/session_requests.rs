//! Requests of an MCP client session made as they are on its upstream
//! session: the log level, resource subscriptions and completions.

use rmcp::{ServiceError, model::CompleteResult};
use serde_json::Value;

use crate::domain::ports::SessionRequest;

/// Makes `request` on the session of `peer`; the completion of a
/// completion request, `None` for the others (their results are empty). Logging and `resources/subscribe` are deprecated in
/// the newest protocol, and still what a session of the initialize era
/// speaks.
#[expect(
    deprecated,
    reason = "logging and resource subscriptions are what clients of the initialize era speak; deprecated only for 2026-07-28"
)]
pub(super) async fn pass_on(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    request: SessionRequest,
) -> Result<Option<CompleteResult>, ServiceError> {
    use rmcp::model::{SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams};
    fn unreadable(error: serde_json::Error) -> ServiceError {
        ServiceError::McpError(rmcp::ErrorData::invalid_params(error.to_string(), None))
    }
    match request {
        SessionRequest::SetLevel(level) => {
            let level = serde_json::from_value(Value::String(level)).map_err(unreadable)?;
            peer.set_level(SetLevelRequestParams::new(level)).await?;
        }
        SessionRequest::Subscribe(uri) => {
            peer.subscribe(SubscribeRequestParams::new(uri.into_string()))
                .await?;
        }
        SessionRequest::Unsubscribe(uri) => {
            peer.unsubscribe(UnsubscribeRequestParams::new(uri.into_string()))
                .await?;
        }
        SessionRequest::Complete(_, params) => return Ok(Some(peer.complete(params).await?)),
    }
    Ok(None)
}
