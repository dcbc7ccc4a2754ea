//! What can go wrong in runs-service's use cases.

use switchboard_server::FieldViolation;

use super::{input::InvalidInput, ports::RepositoryError};

/// A use-case failure; `inbound` maps it to a gRPC status in one place.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// Request fields are invalid.
    #[error("invalid request")]
    Invalid(Vec<FieldViolation>),
    /// No such object for the caller.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The caller lacks a role.
    #[error("{0}")]
    Forbidden(&'static str),
    /// The caller may not do this, as another service said.
    #[error("{0}")]
    NotAllowed(String),
    /// A service this one needs could not be reached; trying again may work.
    #[error("{0}")]
    Unavailable(String),
    /// The object's state forbids the operation.
    #[error("{0}")]
    FailedPrecondition(String),
    /// A limit was reached; the message says which and whether to retry.
    #[error("{0}")]
    ResourceExhausted(String),
    /// The thread already has a run in progress.
    #[error("the thread already has an active run")]
    ThreadBusy,
    /// An organization quota is used up; retrying does not help.
    #[error("{0}")]
    QuotaExceeded(String),
    /// The organization or the user has as many runs in flight as it may;
    /// retrying when one ends helps.
    #[error("{0}")]
    RunLimit(String),
    /// Every work slot is taken; retrying shortly helps.
    #[error("{0}")]
    Busy(String),
    /// Anything unexpected.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl RunsError {
    /// An invalid-request error about one field.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self::Invalid(vec![FieldViolation::new(field, description)])
    }
}

impl From<FieldViolation> for RunsError {
    fn from(violation: FieldViolation) -> Self {
        Self::Invalid(vec![violation])
    }
}

impl From<InvalidInput> for RunsError {
    fn from(InvalidInput(violations): InvalidInput) -> Self {
        Self::Invalid(violations)
    }
}

impl From<RepositoryError> for RunsError {
    fn from(error: RepositoryError) -> Self {
        match error {
            RepositoryError::ThreadBusy => Self::ThreadBusy,
            error @ RepositoryError::RunEnded => Self::FailedPrecondition(error.to_string()),
            RepositoryError::Other(error) => Self::Internal(error),
        }
    }
}
