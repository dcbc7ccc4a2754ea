//! The one mapping from service errors to gRPC statuses.
//!
//! Services map their domain errors into [`ApiError`]; this module alone turns
//! it into a `tonic::Status` with a `google.rpc.ErrorInfo` (stable reason) and,
//! for invalid input, a `google.rpc.BadRequest` naming the fields.

use std::collections::HashMap;

use switchboard_proto::common::v1::ErrorReason;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The `google.rpc.ErrorInfo` domain of Switchboard errors.
pub const ERROR_DOMAIN: &str = "switchboard.dev";

/// One invalid request field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    /// The field path, for example `transport.streamable_http.url`.
    pub field: String,
    /// What is wrong with it.
    pub description: String,
}

impl FieldViolation {
    /// A violation of `field`.
    pub fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            description: description.into(),
        }
    }
}

/// An error a Switchboard RPC returns. Messages are shown to callers, so they
/// never carry secrets or internals; [`ApiError::Internal`] is logged and
/// replaced by a generic message.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Request fields are invalid.
    #[error("invalid request: {}", describe(.0))]
    InvalidArgument(Vec<FieldViolation>),
    /// The object does not exist in the caller's organization.
    #[error("{0} not found")]
    NotFound(String),
    /// A unique key is taken.
    #[error("{0}")]
    AlreadyExists(String),
    /// The caller lacks a role.
    #[error("{0}")]
    PermissionDenied(String),
    /// The object's state forbids the operation.
    #[error("{0}")]
    FailedPrecondition(String),
    /// The caller must authorize access first (OAuth): the URL to send the
    /// user's browser to travels in the `ErrorInfo` metadata as
    /// `authorization_url`.
    #[error("{message}")]
    AuthorizationRequired {
        /// What needs authorizing.
        message: String,
        /// Where to send the user's browser.
        authorization_url: String,
    },
    /// Missing or invalid credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// A dependency is down; retry with backoff.
    #[error("{0}")]
    Unavailable(String),
    /// The deadline passed.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// A limit was exceeded.
    #[error("{0}")]
    ResourceExhausted(String),
    /// A limit was reached that frees up by itself: the caller may try again
    /// after `retry_after` (sent as a `google.rpc.RetryInfo`).
    #[error("{message}")]
    Busy {
        /// What is exhausted.
        message: String,
        /// When trying again may succeed.
        retry_after: std::time::Duration,
    },
    /// Not served by this version.
    #[error("{0} is not implemented")]
    Unimplemented(String),
    /// Anything unexpected. Logged in full, returned as "internal error".
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

fn describe(violations: &[FieldViolation]) -> String {
    violations
        .iter()
        .map(|v| format!("{}: {}", v.field, v.description))
        .collect::<Vec<_>>()
        .join("; ")
}

impl ApiError {
    /// An invalid-argument error about one field.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self::InvalidArgument(vec![FieldViolation::new(field, description)])
    }

    fn code_and_reason(&self) -> (Code, ErrorReason) {
        match self {
            Self::InvalidArgument(_) => (Code::InvalidArgument, ErrorReason::InvalidArgument),
            Self::NotFound(_) => (Code::NotFound, ErrorReason::NotFound),
            Self::AlreadyExists(_) => (Code::AlreadyExists, ErrorReason::AlreadyExists),
            Self::PermissionDenied(_) => (Code::PermissionDenied, ErrorReason::PermissionDenied),
            Self::FailedPrecondition(_) => {
                (Code::FailedPrecondition, ErrorReason::FailedPrecondition)
            }
            Self::AuthorizationRequired { .. } => {
                (Code::FailedPrecondition, ErrorReason::AuthorizationRequired)
            }
            Self::Unauthenticated(_) => (Code::Unauthenticated, ErrorReason::Unauthenticated),
            Self::Unavailable(_) => (Code::Unavailable, ErrorReason::Unavailable),
            Self::DeadlineExceeded(_) => (Code::DeadlineExceeded, ErrorReason::DeadlineExceeded),
            Self::ResourceExhausted(_) | Self::Busy { .. } => {
                (Code::ResourceExhausted, ErrorReason::ResourceExhausted)
            }
            Self::Unimplemented(_) => (Code::Unimplemented, ErrorReason::Unimplemented),
            Self::Internal(_) => (Code::Internal, ErrorReason::Internal),
        }
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Self {
        let (code, reason) = error.code_and_reason();
        let metadata = match &error {
            ApiError::AuthorizationRequired {
                authorization_url, ..
            } => HashMap::from([("authorization_url".to_owned(), authorization_url.clone())]),
            _ => HashMap::new(),
        };
        let mut details =
            ErrorDetails::with_error_info(reason.as_str_name(), ERROR_DOMAIN, metadata);
        let message = match &error {
            ApiError::Internal(source) => {
                tracing::error!(error = ?source, "internal error");
                "internal error".to_owned()
            }
            ApiError::InvalidArgument(violations) => {
                for v in violations {
                    details.add_bad_request_violation(v.field.clone(), v.description.clone());
                }
                error.to_string()
            }
            ApiError::Busy { retry_after, .. } => {
                details.set_retry_info(Some(*retry_after));
                error.to_string()
            }
            _ => error.to_string(),
        };
        Status::with_error_details(code, message, details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_argument_names_each_field_in_a_bad_request_detail() {
        let status = Status::from(ApiError::InvalidArgument(vec![
            FieldViolation::new("slug", "must match ^[a-z][a-z0-9_]{0,31}$"),
            FieldViolation::new("display_name", "required"),
        ]));
        assert_eq!(status.code(), Code::InvalidArgument);
        let details = status.get_error_details();
        let fields: Vec<_> = details
            .bad_request()
            .expect("a BadRequest detail")
            .field_violations
            .iter()
            .map(|v| v.field.as_str())
            .collect();
        assert_eq!(fields, ["slug", "display_name"]);
        assert_eq!(
            details.error_info().expect("an ErrorInfo detail").reason,
            "ERROR_REASON_INVALID_ARGUMENT"
        );
    }

    #[test]
    fn a_busy_refusal_carries_its_retry_delay() {
        let status = Status::from(ApiError::Busy {
            message: "sessions are busy".into(),
            retry_after: std::time::Duration::from_secs(1),
        });
        assert_eq!(status.code(), Code::ResourceExhausted);
        let details = status.get_error_details();
        let retry = details.retry_info().expect("a RetryInfo detail");
        assert_eq!(retry.retry_delay, Some(std::time::Duration::from_secs(1)));
    }

    #[test]
    fn an_authorization_requirement_carries_the_url_in_its_error_info() {
        let status = Status::from(ApiError::AuthorizationRequired {
            message: "connect your account".into(),
            authorization_url: "https://as.example/authorize?state=s".into(),
        });
        assert_eq!(status.code(), Code::FailedPrecondition);
        let details = status.get_error_details();
        let info = details.error_info().expect("an ErrorInfo detail");
        assert_eq!(info.reason, "ERROR_REASON_AUTHORIZATION_REQUIRED");
        assert_eq!(
            info.metadata.get("authorization_url").map(String::as_str),
            Some("https://as.example/authorize?state=s")
        );
    }

    #[test]
    fn internal_errors_do_not_leak_their_cause() {
        let status = Status::from(ApiError::Internal(anyhow::anyhow!(
            "connection to postgres://secret@db failed"
        )));
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), "internal error");
    }
}
