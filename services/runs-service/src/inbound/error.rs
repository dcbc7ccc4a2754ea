//! The one place runs-service's domain errors become gRPC statuses.

use std::time::Duration;

use switchboard_server::{ApiError, Refusal};

use crate::domain::error::RunsError;

/// The retry delay suggested at a run limit: runs last seconds to minutes,
/// so a shorter one only spins the caller.
const RUN_LIMIT_RETRY_AFTER: Duration = Duration::from_secs(5);

impl From<RunsError> for ApiError {
    fn from(error: RunsError) -> Self {
        match error {
            RunsError::Invalid(violations) => Self::InvalidArgument(violations),
            RunsError::NotFound(what) => Self::NotFound(what.to_owned()),
            RunsError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            RunsError::NotAllowed(message) => Self::PermissionDenied(message),
            RunsError::Unavailable(message) => Self::Unavailable(message),
            RunsError::FailedPrecondition(message) => Self::FailedPrecondition(message),
            RunsError::ResourceExhausted(message) => Self::ResourceExhausted(message),
            error @ RunsError::ThreadBusy => Self::refused(Refusal::ThreadBusy, error.to_string()),
            RunsError::QuotaExceeded(message) => Self::refused(Refusal::QuotaExceeded, message),
            RunsError::RunLimit(message) => Self::refused(
                Refusal::RunLimit {
                    retry_after: RUN_LIMIT_RETRY_AFTER,
                },
                message,
            ),
            // Work slots free up as queries and imports end.
            RunsError::Busy(message) => Self::Busy {
                message,
                retry_after: Duration::from_secs(1),
            },
            RunsError::Internal(error) => Self::Internal(error),
        }
    }
}

/// What `?` turns a domain error into in a handler: the status of the one
/// mapping above.
impl From<RunsError> for tonic::Status {
    fn from(error: RunsError) -> Self {
        ApiError::from(error).into()
    }
}

/// A domain error as a gRPC status, where `?` does not apply.
pub(crate) fn status(error: RunsError) -> tonic::Status {
    error.into()
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
