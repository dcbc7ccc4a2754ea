//! The one mapping from service errors to gRPC statuses.
//!
//! Services map their domain errors into [`ApiError`]; this module alone turns
//! it into a `tonic::Status` with a `google.rpc.ErrorInfo` (stable reason) and,
//! for invalid input, a `google.rpc.BadRequest` naming the fields. A
//! [`Refusal`] names what happened more precisely than its gRPC code, and
//! carries a `google.rpc.RetryInfo` where trying again helps.
//!
//! The way back, a status as the typed error its client acts on, is
//! [`crate::client_error`]; [`Refusal::from_status_parts`] here is the
//! inverse of [`Refusal::status_parts`], kept beside it.

use std::{collections::HashMap, time::Duration};

use switchboard_proto::common::v1::ErrorReason;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::server_facts::ServerFacts;

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
    /// A policy rule refuses the call: PERMISSION_DENIED with the rule in
    /// the `ErrorInfo` metadata as `rule`, so that a client can say which
    /// rule without reading the message.
    #[error("{message}")]
    PolicyDenied {
        /// What the caller reads.
        message: String,
        /// The deciding rule, `policy@version/rule`.
        rule: String,
    },
    /// The caller must authorize access first (OAuth): the URL to send the
    /// user's browser to travels in the `ErrorInfo` metadata as
    /// `authorization_url` (none when the caller cannot authorize it
    /// themselves).
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
        retry_after: Duration,
    },
    /// A refusal whose reason says more than its gRPC code.
    #[error("{message}")]
    Refused {
        /// What happened; decides the code, the reason and the retry delay.
        refusal: Refusal,
        /// What the caller reads.
        message: String,
        /// What an MCP server's failure was, for a client that words it
        /// itself (`ErrorInfo` metadata).
        facts: Option<ServerFacts>,
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

/// What happened, when the gRPC code alone does not say it. Each refusal has
/// one code, one `ErrorReason` and, where a retry helps, a retry delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The integration is disabled.
    IntegrationDisabled,
    /// The thread already has a run in progress.
    ThreadBusy,
    /// The MCP server wants an authorization the integration lacks.
    AuthorizationRequired,
    /// An organization quota is used up.
    QuotaExceeded,
    /// mcp-service's MCP sessions are all in use.
    SessionLimit {
        /// When trying again may succeed.
        retry_after: Duration,
    },
    /// The MCP server could not be reached or dropped the connection.
    McpServerUnreachable {
        /// When trying again may succeed.
        retry_after: Duration,
    },
    /// The MCP server did not answer in time.
    McpServerTimeout,
    /// The MCP server refused the call with a JSON-RPC error.
    McpServerRejected,
    /// The MCP server said the call's parameters are invalid.
    McpServerInvalidParams,
    /// The MCP server does not know the resource.
    McpServerResourceNotFound,
    /// The MCP server's answer went past a size or count bound.
    McpResultTooLarge,
    /// The request id was used before for a different request.
    RequestIdReused,
    /// A request with the same request id is still being served.
    RequestInProgress {
        /// When its result may be ready.
        retry_after: Duration,
    },
    /// The organization or the user has as many runs in flight as it may.
    RunLimit {
        /// When one of them may have ended.
        retry_after: Duration,
    },
    /// An approval presented by another user than its requester.
    ApprovalOtherRequester,
    /// An approval presented for another integration.
    ApprovalOtherIntegration,
    /// An approval presented for another tool.
    ApprovalOtherTool,
    /// An approval presented with other arguments.
    ApprovalOtherArguments,
    /// An approval still waiting for an approver.
    ApprovalPending,
    /// An approval already used.
    ApprovalUsed,
    /// An approval not decided, or not used, in time.
    ApprovalExpired,
    /// An approval already decided.
    ApprovalDecided,
}

impl Refusal {
    /// The gRPC code, the `ErrorReason` and the retry delay of the refusal:
    /// the one table clients rely on (docs/errors.md lists it).
    pub fn status_parts(self) -> (Code, ErrorReason, Option<Duration>) {
        match self {
            Self::IntegrationDisabled => (
                Code::FailedPrecondition,
                ErrorReason::IntegrationDisabled,
                None,
            ),
            Self::ThreadBusy => (Code::FailedPrecondition, ErrorReason::ThreadBusy, None),
            Self::AuthorizationRequired => (
                Code::FailedPrecondition,
                ErrorReason::AuthorizationRequired,
                None,
            ),
            Self::QuotaExceeded => (Code::ResourceExhausted, ErrorReason::QuotaExceeded, None),
            Self::SessionLimit { retry_after } => (
                Code::ResourceExhausted,
                ErrorReason::SessionLimit,
                Some(retry_after),
            ),
            Self::McpServerUnreachable { retry_after } => (
                Code::Unavailable,
                ErrorReason::McpServerUnreachable,
                Some(retry_after),
            ),
            Self::McpServerTimeout => (Code::DeadlineExceeded, ErrorReason::McpServerTimeout, None),
            Self::McpServerRejected => {
                (Code::FailedPrecondition, ErrorReason::McpServerError, None)
            }
            Self::McpServerInvalidParams => {
                (Code::InvalidArgument, ErrorReason::McpServerError, None)
            }
            Self::McpServerResourceNotFound => (Code::NotFound, ErrorReason::McpServerError, None),
            Self::McpResultTooLarge => (
                Code::ResourceExhausted,
                ErrorReason::McpResultTooLarge,
                None,
            ),
            Self::RequestIdReused => (Code::InvalidArgument, ErrorReason::RequestIdReused, None),
            Self::RequestInProgress { retry_after } => (
                Code::Aborted,
                ErrorReason::RequestInProgress,
                Some(retry_after),
            ),
            Self::RunLimit { retry_after } => (
                Code::ResourceExhausted,
                ErrorReason::RunLimit,
                Some(retry_after),
            ),
            Self::ApprovalOtherRequester
            | Self::ApprovalOtherIntegration
            | Self::ApprovalOtherTool
            | Self::ApprovalOtherArguments
            | Self::ApprovalPending
            | Self::ApprovalUsed
            | Self::ApprovalExpired
            | Self::ApprovalDecided => self.approval_parts(),
        }
    }

    /// The parts of the refusals of an approval: the mismatches are
    /// PERMISSION_DENIED, the rest FAILED_PRECONDITION.
    fn approval_parts(self) -> (Code, ErrorReason, Option<Duration>) {
        let reason = match self {
            Self::ApprovalOtherRequester => ErrorReason::ApprovalOtherRequester,
            Self::ApprovalOtherIntegration => ErrorReason::ApprovalOtherIntegration,
            Self::ApprovalOtherTool => ErrorReason::ApprovalOtherTool,
            Self::ApprovalOtherArguments => ErrorReason::ApprovalOtherArguments,
            Self::ApprovalPending => ErrorReason::ApprovalPending,
            Self::ApprovalUsed => ErrorReason::ApprovalUsed,
            Self::ApprovalExpired => ErrorReason::ApprovalExpired,
            _ => ErrorReason::ApprovalDecided,
        };
        let code = match self {
            Self::ApprovalOtherRequester
            | Self::ApprovalOtherIntegration
            | Self::ApprovalOtherTool
            | Self::ApprovalOtherArguments => Code::PermissionDenied,
            _ => Code::FailedPrecondition,
        };
        (code, reason, None)
    }
}

impl Refusal {
    /// The refusal a status's code, reason and retry delay encode: the
    /// inverse of [`Refusal::status_parts`], so that a client reads exactly
    /// what the server meant. `None` for a reason no refusal carries. A
    /// delay missing where the refusal has one reads as zero.
    pub fn from_status_parts(
        code: Code,
        reason: ErrorReason,
        retry_after: Option<Duration>,
    ) -> Option<Self> {
        let retry_after = retry_after.unwrap_or_default();
        Some(match reason {
            ErrorReason::IntegrationDisabled => Self::IntegrationDisabled,
            ErrorReason::ThreadBusy => Self::ThreadBusy,
            ErrorReason::AuthorizationRequired => Self::AuthorizationRequired,
            ErrorReason::QuotaExceeded => Self::QuotaExceeded,
            ErrorReason::SessionLimit => Self::SessionLimit { retry_after },
            ErrorReason::McpServerUnreachable => Self::McpServerUnreachable { retry_after },
            ErrorReason::McpServerTimeout => Self::McpServerTimeout,
            ErrorReason::McpServerError => match code {
                Code::InvalidArgument => Self::McpServerInvalidParams,
                Code::NotFound => Self::McpServerResourceNotFound,
                _ => Self::McpServerRejected,
            },
            ErrorReason::McpResultTooLarge => Self::McpResultTooLarge,
            ErrorReason::RequestIdReused => Self::RequestIdReused,
            ErrorReason::RequestInProgress => Self::RequestInProgress { retry_after },
            ErrorReason::RunLimit => Self::RunLimit { retry_after },
            ErrorReason::ApprovalOtherRequester => Self::ApprovalOtherRequester,
            ErrorReason::ApprovalOtherIntegration => Self::ApprovalOtherIntegration,
            ErrorReason::ApprovalOtherTool => Self::ApprovalOtherTool,
            ErrorReason::ApprovalOtherArguments => Self::ApprovalOtherArguments,
            ErrorReason::ApprovalPending => Self::ApprovalPending,
            ErrorReason::ApprovalUsed => Self::ApprovalUsed,
            ErrorReason::ApprovalExpired => Self::ApprovalExpired,
            ErrorReason::ApprovalDecided => Self::ApprovalDecided,
            _ => return None,
        })
    }
}

impl ApiError {
    /// A refusal saying what happened.
    pub fn refused(refusal: Refusal, message: impl Into<String>) -> Self {
        Self::Refused {
            refusal,
            message: message.into(),
            facts: None,
        }
    }

    /// A refusal for an MCP server's failure, with its facts beside the
    /// message.
    pub fn server_failed(refusal: Refusal, facts: ServerFacts, message: impl Into<String>) -> Self {
        Self::Refused {
            refusal,
            message: message.into(),
            facts: Some(facts),
        }
    }

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
            Self::PolicyDenied { .. } => (Code::PermissionDenied, ErrorReason::PolicyDenied),
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
            Self::Refused { refusal, .. } => {
                let (code, reason, _) = refusal.status_parts();
                (code, reason)
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
            } if !authorization_url.is_empty() => {
                HashMap::from([("authorization_url".to_owned(), authorization_url.clone())])
            }
            ApiError::PolicyDenied { rule, .. } => {
                HashMap::from([("rule".to_owned(), rule.clone())])
            }
            ApiError::Refused {
                facts: Some(facts), ..
            } => facts.to_metadata(),
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
            ApiError::Refused { refusal, .. } => {
                if let (_, _, Some(retry_after)) = refusal.status_parts() {
                    details.set_retry_info(Some(retry_after));
                }
                error.to_string()
            }
            _ => error.to_string(),
        };
        Status::with_error_details(code, message, details)
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
