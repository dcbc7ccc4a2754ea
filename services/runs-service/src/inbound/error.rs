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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reached_limit_is_resource_exhausted_with_its_message() {
        let status = status(RunsError::ResourceExhausted(
            "your organization already runs 2 data-source queries or imports at once".into(),
        ));
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert!(status.message().contains("already runs 2"));
    }
}
