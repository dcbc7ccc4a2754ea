//! The one place mcp-service's domain errors become gRPC statuses.

use switchboard_server::ApiError;

use crate::domain::{
    error::McpError,
    ports::{AuthorizationError, CallError},
};

impl From<McpError> for ApiError {
    fn from(error: McpError) -> Self {
        match error {
            McpError::Invalid(violations) => Self::InvalidArgument(violations),
            McpError::NotFound => Self::NotFound("integration".to_owned()),
            error @ McpError::SlugTaken(_) => Self::AlreadyExists(error.to_string()),
            McpError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            error @ McpError::Disabled(_) => Self::FailedPrecondition(error.to_string()),
            McpError::Upstream(error) => upstream(error),
            McpError::AuthorizationRequired { authorization_url } => Self::AuthorizationRequired {
                message: AUTHORIZATION_REQUIRED.to_owned(),
                authorization_url,
            },
            McpError::Authorization(error) => authorization(error),
            McpError::Internal(error) => Self::Internal(error),
        }
    }
}

/// What a caller is told when they must authorize first.
const AUTHORIZATION_REQUIRED: &str = "connect your account to the integration first: send your browser to the authorization_url \
     of the ErrorInfo metadata, then call CompleteAuthorization";

/// An authorization that could not be started or completed.
fn authorization(error: AuthorizationError) -> ApiError {
    match error {
        error @ AuthorizationError::UnknownState => ApiError::NotFound(error.to_string()),
        error @ AuthorizationError::NotPerUser => ApiError::FailedPrecondition(error.to_string()),
        error @ AuthorizationError::Failed(_) => ApiError::FailedPrecondition(error.to_string()),
        AuthorizationError::Internal(error) => ApiError::Internal(error),
    }
}

/// A domain error as a gRPC status.
pub(crate) fn status(error: McpError) -> tonic::Status {
    ApiError::from(error).into()
}

/// JSON-RPC "invalid params" and "resource not found" (MCP) codes.
const INVALID_PARAMS: i32 = -32602;
const RESOURCE_NOT_FOUND: i32 = -32002;

/// An MCP server's failure, as the status a caller can act on.
fn upstream(error: CallError) -> ApiError {
    if let CallError::Exhausted { retry_after, .. } = &error {
        // A limit of mcp-service, not the server's doing.
        return ApiError::Busy {
            retry_after: *retry_after,
            message: error.to_string(),
        };
    }
    let message = format!("MCP server: {error}");
    match error {
        CallError::Exhausted { .. } => ApiError::ResourceExhausted(message),
        CallError::Connect(_) | CallError::Transport(_) => ApiError::Unavailable(message),
        // Turned into an authorization URL by the domain; reaching here
        // means none could be made.
        CallError::AuthorizationRequired(_) => ApiError::FailedPrecondition(message),
        CallError::Timeout(_) => ApiError::DeadlineExceeded(message),
        CallError::TooLarge { .. } | CallError::ListingTooLong(_) => {
            ApiError::ResourceExhausted(message)
        }
        CallError::Upstream {
            code: INVALID_PARAMS,
            ..
        } => ApiError::invalid("upstream", message),
        CallError::Upstream {
            code: RESOURCE_NOT_FOUND,
            ..
        } => ApiError::NotFound(message),
        CallError::Upstream { .. } => ApiError::FailedPrecondition(message),
    }
}
