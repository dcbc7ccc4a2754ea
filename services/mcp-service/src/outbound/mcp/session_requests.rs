//! Requests of an MCP client session made as they are on its upstream
//! session: the log level, resource subscriptions and completions.

use rmcp::ServiceError;
use serde_json::Value;

use crate::domain::ports::SessionRequest;

/// Makes `request` on the session of `peer`; the result's wire JSON, `null`
/// when it is empty. Logging and `resources/subscribe` are deprecated in
/// the newest protocol, and still what a session of the initialize era
/// speaks.
#[expect(
    deprecated,
    reason = "logging and resource subscriptions are what clients of the initialize era speak; deprecated only for 2026-07-28"
)]
pub(super) async fn pass_on(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    request: SessionRequest,
) -> Result<Value, ServiceError> {
    use rmcp::model::{
        CompleteRequestParams, SetLevelRequestParams, SubscribeRequestParams,
        UnsubscribeRequestParams,
    };
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
        SessionRequest::Complete(_, params) => {
            let params: CompleteRequestParams =
                serde_json::from_value(params).map_err(unreadable)?;
            let result = peer.complete(params).await?;
            return serde_json::to_value(result).map_err(unreadable);
        }
    }
    Ok(Value::Null)
}
