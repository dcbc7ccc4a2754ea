//! The one place runs-service's domain errors become gRPC statuses.

use switchboard_server::ApiError;

use crate::domain::error::RunsError;

impl From<RunsError> for ApiError {
    fn from(error: RunsError) -> Self {
        match error {
            RunsError::Invalid(violations) => Self::InvalidArgument(violations),
            RunsError::NotFound(what) => Self::NotFound(what.to_owned()),
            RunsError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            RunsError::FailedPrecondition(message) => Self::FailedPrecondition(message),
            RunsError::ResourceExhausted(message) => Self::ResourceExhausted(message),
            RunsError::Internal(error) => Self::Internal(error),
        }
    }
}

/// A domain error as a gRPC status.
pub(crate) fn status(error: RunsError) -> tonic::Status {
    ApiError::from(error).into()
}
