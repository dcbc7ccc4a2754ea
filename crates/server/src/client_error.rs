//! The way back: a Switchboard status as the typed error its client acts on.
//!
//! [`crate::error`] encodes an [`ApiError`] as a status (a code, a
//! `google.rpc.ErrorInfo` reason, a `RetryInfo`, a `BadRequest`); this
//! module decodes exactly that, by the `ErrorReason` enum, so that no client
//! matches a reason's spelling or a message's words. A status without a
//! Switchboard `ErrorInfo` (from a proxy, a lost connection, an older
//! server) keeps only its code.

use std::time::Duration;

use switchboard_proto::common::v1::ErrorReason;
use tonic::{Code, Status};
use tonic_types::StatusExt as _;

use crate::{
    error::{ERROR_DOMAIN, FieldViolation, Refusal},
    server_facts::ServerFacts,
};

/// A failed call as its client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    /// The gRPC code.
    pub code: Code,
    /// What happened, as the server encoded it.
    pub kind: ErrorKind,
    /// The status message, written for people.
    pub message: String,
    /// What an MCP server's failure was, when the status says.
    pub server_facts: Option<ServerFacts>,
}

/// What happened, one variant per way [`crate::ApiError`] and the server's
/// layers encode a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// Request fields are invalid, each named.
    InvalidArgument(Vec<FieldViolation>),
    /// The object does not exist in the caller's organization.
    NotFound,
    /// A unique key is taken.
    AlreadyExists,
    /// The caller lacks a role.
    PermissionDenied,
    /// A policy rule refuses the call.
    PolicyDenied {
        /// The deciding rule, `policy@version/rule`.
        rule: String,
    },
    /// The object's state forbids the operation.
    FailedPrecondition,
    /// The caller must authorize access first (OAuth); the URL to send the
    /// user's browser to, when the caller may authorize it themselves.
    AuthorizationRequired {
        /// Where the user's browser goes.
        authorization_url: Option<String>,
    },
    /// Missing or invalid credentials.
    Unauthenticated,
    /// A dependency is down.
    Unavailable,
    /// The deadline passed.
    DeadlineExceeded,
    /// A limit was exceeded.
    ResourceExhausted,
    /// A limit that frees up by itself was reached.
    Busy {
        /// When trying again may succeed.
        retry_after: Duration,
    },
    /// The organization has as many calls in flight as it may.
    OrganizationConcurrencyLimit {
        /// When trying again may succeed.
        retry_after: Option<Duration>,
    },
    /// The organization used up its calls per second.
    OrganizationRateLimit {
        /// When trying again may succeed.
        retry_after: Option<Duration>,
    },
    /// A refusal whose reason says more than its code.
    Refused(Refusal),
    /// Not served by this version.
    Unimplemented,
    /// Anything unexpected on the server.
    Internal,
    /// No Switchboard reason came with the status: only its code says what
    /// happened.
    Unexplained,
}

impl ErrorKind {
    /// When trying again may succeed, when the server said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Busy { retry_after } => Some(*retry_after),
            Self::OrganizationConcurrencyLimit { retry_after }
            | Self::OrganizationRateLimit { retry_after } => *retry_after,
            Self::Refused(refusal) => refusal.status_parts().2,
            _ => None,
        }
    }
}

impl From<&Status> for ClientError {
    fn from(status: &Status) -> Self {
        Self {
            code: status.code(),
            kind: kind(status),
            message: status.message().to_owned(),
            server_facts: server_facts(status),
        }
    }
}

/// The facts of an MCP server's failure a Switchboard status carries.
fn server_facts(status: &Status) -> Option<ServerFacts> {
    let details = status.get_error_details();
    let info = details.error_info().filter(|i| i.domain == ERROR_DOMAIN)?;
    ServerFacts::from_metadata(&info.metadata)
}

/// What a status's details say happened.
fn kind(status: &Status) -> ErrorKind {
    let details = status.get_error_details();
    let Some(info) = details.error_info().filter(|i| i.domain == ERROR_DOMAIN) else {
        return ErrorKind::Unexplained;
    };
    let Some(reason) = ErrorReason::from_str_name(&info.reason) else {
        return ErrorKind::Unexplained;
    };
    let retry_after = details.retry_info().and_then(|retry| retry.retry_delay);
    match reason {
        ErrorReason::InvalidArgument => ErrorKind::InvalidArgument(
            details
                .bad_request()
                .map(|bad| {
                    bad.field_violations
                        .iter()
                        .map(|v| FieldViolation::new(&v.field, &v.description))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        ErrorReason::NotFound => ErrorKind::NotFound,
        ErrorReason::AlreadyExists => ErrorKind::AlreadyExists,
        ErrorReason::PermissionDenied => ErrorKind::PermissionDenied,
        ErrorReason::PolicyDenied => ErrorKind::PolicyDenied {
            rule: info.metadata.get("rule").cloned().unwrap_or_default(),
        },
        ErrorReason::FailedPrecondition => ErrorKind::FailedPrecondition,
        // One encoding, whether the server named it by `ApiError` or by
        // `Refusal`: the URL is what a client acts on.
        ErrorReason::AuthorizationRequired => ErrorKind::AuthorizationRequired {
            authorization_url: info.metadata.get("authorization_url").cloned(),
        },
        ErrorReason::Unauthenticated => ErrorKind::Unauthenticated,
        ErrorReason::Unavailable => ErrorKind::Unavailable,
        ErrorReason::DeadlineExceeded => ErrorKind::DeadlineExceeded,
        ErrorReason::ResourceExhausted => match retry_after {
            Some(retry_after) => ErrorKind::Busy { retry_after },
            None => ErrorKind::ResourceExhausted,
        },
        ErrorReason::OrganizationConcurrencyLimit => {
            ErrorKind::OrganizationConcurrencyLimit { retry_after }
        }
        ErrorReason::OrganizationRateLimit => ErrorKind::OrganizationRateLimit { retry_after },
        ErrorReason::Unimplemented => ErrorKind::Unimplemented,
        ErrorReason::Internal => ErrorKind::Internal,
        ErrorReason::Unspecified => ErrorKind::Unexplained,
        reason => Refusal::from_status_parts(status.code(), reason, retry_after)
            .map_or(ErrorKind::Unexplained, ErrorKind::Refused),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use tonic_types::ErrorDetails;

    use super::*;
    use crate::ApiError;

    fn round_trip(error: ApiError) -> ClientError {
        ClientError::from(&Status::from(error))
    }

    fn every_refusal() -> Vec<Refusal> {
        let delay = Duration::from_millis(1500);
        vec![
            Refusal::IntegrationDisabled,
            Refusal::ThreadBusy,
            Refusal::QuotaExceeded,
            Refusal::SessionLimit { retry_after: delay },
            Refusal::McpServerUnreachable { retry_after: delay },
            Refusal::McpServerTimeout,
            Refusal::McpServerRejected,
            Refusal::McpServerInvalidParams,
            Refusal::McpServerResourceNotFound,
            Refusal::McpResultTooLarge,
            Refusal::RequestIdReused,
            Refusal::RequestInProgress { retry_after: delay },
            Refusal::RunLimit { retry_after: delay },
        ]
    }

    #[test]
    fn every_refusal_decodes_to_itself_with_its_code_delay_and_message() {
        for refusal in every_refusal() {
            let decoded = round_trip(ApiError::refused(refusal, "what happened"));
            let (code, _, retry_after) = refusal.status_parts();
            assert_eq!(
                decoded,
                ClientError {
                    code,
                    kind: ErrorKind::Refused(refusal),
                    message: "what happened".into(),
                    server_facts: None,
                }
            );
            assert_eq!(decoded.kind.retry_after(), retry_after, "{refusal:?}");
        }
    }

    #[test]
    fn a_server_failure_decodes_with_its_facts_and_its_retry_delay() {
        let facts = ServerFacts::LimitReached {
            detail: "all sessions are busy".into(),
        };
        let retry_after = Duration::from_secs(3);
        let decoded = round_trip(ApiError::server_failed(
            Refusal::SessionLimit { retry_after },
            facts.clone(),
            "busy",
        ));
        assert_eq!(decoded.server_facts, Some(facts));
        assert_eq!(decoded.kind.retry_after(), Some(retry_after));
        assert_eq!(decoded.message, "busy");
        let plain = round_trip(ApiError::refused(Refusal::McpServerTimeout, "slow"));
        assert_eq!(plain.server_facts, None);
    }

    #[test]
    fn a_policy_denial_decodes_with_its_rule() {
        let decoded = round_trip(ApiError::PolicyDenied {
            message: "denied by policy rule p@2/no-deletes: no".into(),
            rule: "p@2/no-deletes".into(),
        });
        assert_eq!(decoded.code, Code::PermissionDenied);
        assert_eq!(
            decoded.kind,
            ErrorKind::PolicyDenied {
                rule: "p@2/no-deletes".into()
            }
        );
        assert_eq!(decoded.message, "denied by policy rule p@2/no-deletes: no");
    }

    #[test]
    fn an_authorization_requirement_decodes_with_its_url_or_without_one() {
        let decoded = round_trip(ApiError::AuthorizationRequired {
            message: "connect your account".into(),
            authorization_url: "https://as.example/authorize?state=s".into(),
        });
        assert_eq!(
            decoded.kind,
            ErrorKind::AuthorizationRequired {
                authorization_url: Some("https://as.example/authorize?state=s".into())
            }
        );
        assert_eq!(decoded.message, "connect your account");
        assert_eq!(decoded.code, Code::FailedPrecondition);
        let without = ErrorKind::AuthorizationRequired {
            authorization_url: None,
        };
        let organization_wide = round_trip(ApiError::AuthorizationRequired {
            message: "an admin connects it".into(),
            authorization_url: String::new(),
        });
        assert_eq!(organization_wide.kind, without);
        let refusal = round_trip(ApiError::refused(Refusal::AuthorizationRequired, "connect"));
        assert_eq!(refusal.kind, without);
    }

    #[test]
    fn every_plain_error_decodes_to_its_kind() {
        let violations = vec![
            FieldViolation::new("slug", "is required"),
            FieldViolation::new("uri", "is longer than 8192 bytes"),
        ];
        let cases = [
            (
                ApiError::InvalidArgument(violations.clone()),
                Code::InvalidArgument,
                ErrorKind::InvalidArgument(violations),
            ),
            (
                ApiError::NotFound("agent".into()),
                Code::NotFound,
                ErrorKind::NotFound,
            ),
            (
                ApiError::AlreadyExists("taken".into()),
                Code::AlreadyExists,
                ErrorKind::AlreadyExists,
            ),
            (
                ApiError::PermissionDenied("admins only".into()),
                Code::PermissionDenied,
                ErrorKind::PermissionDenied,
            ),
            (
                ApiError::FailedPrecondition("not now".into()),
                Code::FailedPrecondition,
                ErrorKind::FailedPrecondition,
            ),
            (
                ApiError::Unauthenticated("no token".into()),
                Code::Unauthenticated,
                ErrorKind::Unauthenticated,
            ),
            (
                ApiError::Unavailable("down".into()),
                Code::Unavailable,
                ErrorKind::Unavailable,
            ),
            (
                ApiError::DeadlineExceeded("late".into()),
                Code::DeadlineExceeded,
                ErrorKind::DeadlineExceeded,
            ),
            (
                ApiError::ResourceExhausted("too big".into()),
                Code::ResourceExhausted,
                ErrorKind::ResourceExhausted,
            ),
            (
                ApiError::Busy {
                    message: "busy".into(),
                    retry_after: Duration::from_secs(3),
                },
                Code::ResourceExhausted,
                ErrorKind::Busy {
                    retry_after: Duration::from_secs(3),
                },
            ),
            (
                ApiError::Unimplemented("streaming".into()),
                Code::Unimplemented,
                ErrorKind::Unimplemented,
            ),
            (
                ApiError::Internal(anyhow::anyhow!("disk on fire")),
                Code::Internal,
                ErrorKind::Internal,
            ),
        ];
        for (error, code, kind) in cases {
            let message = match &error {
                ApiError::Internal(_) => "internal error".to_owned(),
                other => other.to_string(),
            };
            let decoded = round_trip(error);
            assert_eq!(
                decoded,
                ClientError {
                    code,
                    kind,
                    message,
                    server_facts: None,
                }
            );
        }
    }

    #[test]
    fn the_organization_limits_decode_with_their_delay() {
        for (reason, kind) in [
            (
                ErrorReason::OrganizationConcurrencyLimit,
                ErrorKind::OrganizationConcurrencyLimit {
                    retry_after: Some(Duration::from_millis(20)),
                },
            ),
            (
                ErrorReason::OrganizationRateLimit,
                ErrorKind::OrganizationRateLimit {
                    retry_after: Some(Duration::from_millis(20)),
                },
            ),
        ] {
            let mut details =
                ErrorDetails::with_error_info(reason.as_str_name(), ERROR_DOMAIN, HashMap::new());
            details.set_retry_info(Some(Duration::from_millis(20)));
            let status = Status::with_error_details(Code::ResourceExhausted, "slow down", details);
            assert_eq!(ClientError::from(&status).kind, kind);
        }
    }

    #[test]
    fn a_status_without_a_switchboard_reason_keeps_only_its_code() {
        let plain = ClientError::from(&Status::unavailable("connection refused"));
        assert_eq!(plain.kind, ErrorKind::Unexplained);
        assert_eq!(plain.code, Code::Unavailable);
        let details = ErrorDetails::with_error_info(
            "ERROR_REASON_AUTHORIZATION_REQUIRED",
            "elsewhere.example",
            HashMap::new(),
        );
        let foreign = Status::with_error_details(Code::FailedPrecondition, "no", details);
        assert_eq!(ClientError::from(&foreign).kind, ErrorKind::Unexplained);
        let details =
            ErrorDetails::with_error_info("ERROR_REASON_NEWER", ERROR_DOMAIN, HashMap::new());
        let newer = Status::with_error_details(Code::Aborted, "new", details);
        assert_eq!(ClientError::from(&newer).kind, ErrorKind::Unexplained);
    }
}
