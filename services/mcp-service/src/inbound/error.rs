//! The one place mcp-service's domain errors become gRPC statuses.

use switchboard_server::ApiError;

use crate::domain::error::McpError;

impl From<McpError> for ApiError {
    fn from(error: McpError) -> Self {
        match error {
            McpError::Invalid(violations) => Self::InvalidArgument(violations),
            McpError::NotFound => Self::NotFound("integration".to_owned()),
            error @ McpError::SlugTaken(_) => Self::AlreadyExists(error.to_string()),
            McpError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            error @ McpError::Disabled(_) => Self::FailedPrecondition(error.to_string()),
            McpError::Internal(error) => Self::Internal(error),
        }
    }
}

/// A domain error as a gRPC status.
pub(crate) fn status(error: McpError) -> tonic::Status {
    ApiError::from(error).into()
}
