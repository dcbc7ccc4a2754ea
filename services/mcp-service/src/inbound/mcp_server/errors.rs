//! The one place the endpoint's failures become JSON-RPC errors: a
//! server's own error as it sent it, the rest by the kind of the gRPC
//! error the same failure gives.

use rmcp::{ErrorData, model::ErrorCode};
use serde_json::json;
use switchboard_server::ApiError;

use crate::domain::{error::McpError, ports::CallError};

/// `error` as the JSON-RPC error the client reads.
pub(super) fn error_data(error: McpError) -> ErrorData {
    if let McpError::Upstream(CallError::Upstream { code, message }) = error {
        return ErrorData::new(ErrorCode(code), message, None);
    }
    let error = ApiError::from(error);
    let message = error.to_string();
    match error {
        ApiError::InvalidArgument(_) => ErrorData::invalid_params(message, None),
        ApiError::NotFound(_) => ErrorData::resource_not_found(message, None),
        ApiError::AuthorizationRequired {
            authorization_url, ..
        } => ErrorData::invalid_request(
            message,
            (!authorization_url.is_empty())
                .then(|| json!({ "authorizationUrl": authorization_url })),
        ),
        ApiError::PolicyDenied { rule, .. } => {
            ErrorData::invalid_request(message, Some(json!({ "rule": rule })))
        }
        ApiError::Internal(error) => {
            tracing::error!(error = ?error, "internal error");
            ErrorData::internal_error("internal error", None)
        }
        _ => ErrorData::invalid_request(message, None),
    }
}

/// A tool, prompt or resource the surface does not show: the same answer
/// whether it does not exist or is left out of the selection.
pub(super) fn unknown(what: &'static str, name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown {what}: {name}"), None)
}
