//! The one place mcp-service's domain errors become gRPC statuses.

use std::time::Duration;

use switchboard_server::{ApiError, Refusal, ServerFacts};

use crate::domain::{
    approvals::{ApprovalError, ApprovalState, Mismatch, RedeemRefusal},
    audit::AuditError,
    error::McpError,
    policy::{PolicyError, PolicyStoreError},
    ports::{AuthorizationError, CallError},
};

impl From<McpError> for ApiError {
    fn from(error: McpError) -> Self {
        match error {
            McpError::Invalid(violations) => Self::InvalidArgument(violations),
            McpError::NotFound => Self::NotFound("integration".to_owned()),
            error @ McpError::SlugTaken(_) => Self::AlreadyExists(error.to_string()),
            McpError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            error @ McpError::Disabled(_) => {
                Self::refused(Refusal::IntegrationDisabled, error.to_string())
            }
            McpError::Upstream(error) => upstream(error),
            McpError::AuthorizationRequired { authorization_url } => Self::AuthorizationRequired {
                message: AUTHORIZATION_REQUIRED.to_owned(),
                authorization_url,
            },
            error @ McpError::OrganizationConnectionRequired => Self::AuthorizationRequired {
                message: error.to_string(),
                authorization_url: String::new(),
            },
            McpError::Authorization(error) => authorization(error),
            McpError::Policy(error) => error.into(),
            McpError::Approval(error) => error.into(),
            McpError::Audit(error) => error.into(),
            McpError::ToolsetNotFound => Self::NotFound("toolset".to_owned()),
            error @ McpError::ToolsetExists(_) => Self::AlreadyExists(error.to_string()),
            McpError::LimitReached(message) => Self::ResourceExhausted(message),
            McpError::Internal(error) => Self::Internal(error),
        }
    }
}

impl From<PolicyError> for ApiError {
    fn from(error: PolicyError) -> Self {
        match error {
            PolicyError::Invalid(violations) => Self::InvalidArgument(violations),
            PolicyError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            PolicyError::Denied { rule, reason } => Self::PolicyDenied {
                message: policy_denial(&rule, &reason),
                rule,
            },
            error @ PolicyError::ApprovalRequired(_) => Self::FailedPrecondition(error.to_string()),
            error @ PolicyError::OutsideAllowList(_) => Self::PermissionDenied(error.to_string()),
            PolicyError::NotFound => Self::NotFound("policy".to_owned()),
            PolicyError::Conflict(error) => policy_store(error),
            PolicyError::LimitReached(message) => Self::ResourceExhausted(message),
            PolicyError::Internal(error) => Self::Internal(error),
        }
    }
}

impl From<ApprovalError> for ApiError {
    fn from(error: ApprovalError) -> Self {
        match error {
            ApprovalError::Invalid(violations) => Self::InvalidArgument(violations),
            ApprovalError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            // Answered as ExecuteTool responses; a status only elsewhere.
            error @ (ApprovalError::Pending(_) | ApprovalError::Denied(_)) => {
                Self::FailedPrecondition(error.to_string())
            }
            ApprovalError::Refused(RedeemRefusal::NotFound) | ApprovalError::NotFound => {
                Self::NotFound("approval".to_owned())
            }
            ApprovalError::Refused(refused) => approval_refused(&refused),
            error @ ApprovalError::Decided(state) => {
                let refusal = if state == ApprovalState::Expired {
                    Refusal::ApprovalExpired
                } else {
                    Refusal::ApprovalDecided
                };
                Self::refused(refusal, error.to_string())
            }
            ApprovalError::LimitReached(message) => Self::ResourceExhausted(message),
            ApprovalError::Internal(error) => Self::Internal(error),
        }
    }
}

impl From<AuditError> for ApiError {
    fn from(error: AuditError) -> Self {
        match error {
            AuditError::Forbidden(message) => Self::PermissionDenied(message.to_owned()),
            AuditError::Internal(error) => Self::Internal(error),
        }
    }
}

/// An approval that does not fit the call, or cannot be used: the reason
/// names the class.
fn approval_refused(refused: &RedeemRefusal) -> ApiError {
    let message = ApprovalError::Refused(refused.clone()).to_string();
    let refusal = match refused {
        RedeemRefusal::Mismatch(Mismatch::Requester) => Refusal::ApprovalOtherRequester,
        RedeemRefusal::Mismatch(Mismatch::Integration) => Refusal::ApprovalOtherIntegration,
        RedeemRefusal::Mismatch(Mismatch::Tool) => Refusal::ApprovalOtherTool,
        RedeemRefusal::Mismatch(Mismatch::Arguments) => Refusal::ApprovalOtherArguments,
        RedeemRefusal::Pending => Refusal::ApprovalPending,
        RedeemRefusal::AlreadyUsed => Refusal::ApprovalUsed,
        RedeemRefusal::Expired => Refusal::ApprovalExpired,
        RedeemRefusal::NotFound | RedeemRefusal::Denied { .. } => {
            return ApiError::FailedPrecondition(message);
        }
    };
    ApiError::refused(refusal, message)
}

/// What a caller (and the model) reads of a denial: the rule, and its
/// reason when it has one.
fn policy_denial(rule: &str, reason: &str) -> String {
    if reason.is_empty() {
        format!("denied by policy rule {rule}")
    } else {
        format!("denied by policy rule {rule}: {reason}")
    }
}

/// A policy write the stored versions refuse.
fn policy_store(error: PolicyStoreError) -> ApiError {
    match error {
        error @ PolicyStoreError::Exists(_) => ApiError::AlreadyExists(error.to_string()),
        error @ PolicyStoreError::Stale { .. } => ApiError::FailedPrecondition(error.to_string()),
        PolicyStoreError::NotFound => ApiError::NotFound("policy".to_owned()),
        PolicyStoreError::Other(error) => ApiError::Internal(error),
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

/// What `?` turns a domain error into in a handler: the status of the one
/// mapping above.
impl From<McpError> for tonic::Status {
    fn from(error: McpError) -> Self {
        ApiError::from(error).into()
    }
}

impl From<PolicyError> for tonic::Status {
    fn from(error: PolicyError) -> Self {
        ApiError::from(error).into()
    }
}

impl From<ApprovalError> for tonic::Status {
    fn from(error: ApprovalError) -> Self {
        ApiError::from(error).into()
    }
}

impl From<AuditError> for tonic::Status {
    fn from(error: AuditError) -> Self {
        ApiError::from(error).into()
    }
}

/// A domain error as a gRPC status, where `?` does not apply.
pub(crate) fn status(error: McpError) -> tonic::Status {
    error.into()
}

/// JSON-RPC "invalid params" and "resource not found" (MCP) codes.
const INVALID_PARAMS: i32 = -32602;
const RESOURCE_NOT_FOUND: i32 = -32002;

/// How long a caller should wait before calling a server that could not be
/// reached: long enough for a restart or a network blip to pass.
const UNREACHABLE_RETRY_AFTER: Duration = Duration::from_secs(2);

/// An MCP server's failure, as the status a caller can act on: a message
/// for people, and the facts for a client that words them itself.
fn upstream(error: CallError) -> ApiError {
    let message = match &error {
        // A limit of mcp-service, not the server's doing.
        CallError::Exhausted { .. } => error.to_string(),
        _ => format!("MCP server: {error}"),
    };
    let (refusal, facts) = match error {
        CallError::Exhausted {
            message: detail,
            retry_after,
        } => (
            Refusal::SessionLimit { retry_after },
            ServerFacts::LimitReached { detail },
        ),
        CallError::Connect(detail) => (
            Refusal::McpServerUnreachable {
                retry_after: UNREACHABLE_RETRY_AFTER,
            },
            ServerFacts::Unreachable { detail },
        ),
        CallError::Transport(detail) => (
            Refusal::McpServerUnreachable {
                retry_after: UNREACHABLE_RETRY_AFTER,
            },
            ServerFacts::ConnectionLost { detail },
        ),
        // Turned into an authorization URL by the domain; reaching here
        // means none could be made.
        CallError::AuthorizationRequired(_) => return ApiError::FailedPrecondition(message),
        // The caller's own token was not accepted for the exchange: theirs
        // to fix, not the server's.
        CallError::ExchangeRefused(_) => return ApiError::PermissionDenied(message),
        CallError::Timeout(limit) => (Refusal::McpServerTimeout, ServerFacts::Timeout(limit)),
        CallError::TooLarge { limit } => (
            Refusal::McpResultTooLarge,
            ServerFacts::TooLarge {
                limit_bytes: u64::try_from(limit).unwrap_or(u64::MAX),
            },
        ),
        CallError::ListingTooLong(detail) => (
            Refusal::McpResultTooLarge,
            ServerFacts::ListingBound { detail },
        ),
        CallError::Upstream { code, message } => {
            let refusal = match code {
                INVALID_PARAMS => Refusal::McpServerInvalidParams,
                RESOURCE_NOT_FOUND => Refusal::McpServerResourceNotFound,
                _ => Refusal::McpServerRejected,
            };
            (refusal, ServerFacts::JsonRpc { code, message })
        }
    };
    ApiError::server_failed(refusal, facts, message)
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tonic_types::StatusExt as _;

    use super::*;

    fn reason(status: &tonic::Status) -> String {
        status
            .get_error_details()
            .error_info()
            .expect("an ErrorInfo detail")
            .reason
            .clone()
    }

    /// A module's own error reads the same to the caller whether a
    /// handler returns it alone or a use case wrapped it in `McpError`.
    #[test]
    fn an_owned_error_is_the_same_status_alone_and_wrapped() {
        let policy = || {
            [
                PolicyError::Denied {
                    rule: "guard@2/no-deletes".into(),
                    reason: "deletes need a ticket".into(),
                },
                PolicyError::Conflict(PolicyStoreError::Stale {
                    name: "guard".into(),
                    expected: 1,
                    current: 2,
                }),
                PolicyError::NotFound,
                PolicyError::OutsideAllowList("drop_table".into()),
            ]
        };
        let approval = || {
            [
                ApprovalError::Refused(RedeemRefusal::Mismatch(Mismatch::Tool)),
                ApprovalError::Refused(RedeemRefusal::NotFound),
                ApprovalError::Decided(ApprovalState::Expired),
                ApprovalError::Forbidden("deciding needs the approver role"),
            ]
        };
        let expected = [
            (
                Code::PermissionDenied,
                "denied by policy rule guard@2/no-deletes: deletes need a ticket",
            ),
            (
                Code::FailedPrecondition,
                "policy `guard` is at version 2, not 1",
            ),
            (Code::NotFound, "policy not found"),
            (
                Code::PermissionDenied,
                "the agent may not call tool `drop_table`: it is not on the agent's tool list",
            ),
            (
                Code::PermissionDenied,
                "the approval was given for another tool",
            ),
            (Code::NotFound, "approval not found"),
            (Code::FailedPrecondition, "the approval is expired already"),
            (Code::PermissionDenied, "deciding needs the approver role"),
        ];
        let alone = policy()
            .into_iter()
            .map(tonic::Status::from)
            .chain(approval().into_iter().map(tonic::Status::from));
        let wrapped = policy()
            .into_iter()
            .map(McpError::from)
            .chain(approval().into_iter().map(McpError::from))
            .map(status);
        for ((alone, wrapped), (code, message)) in alone.zip(wrapped).zip(expected) {
            assert_eq!((alone.code(), alone.message()), (code, message));
            assert_eq!((wrapped.code(), wrapped.message()), (code, message));
            assert_eq!(alone.details(), wrapped.details(), "{message}");
        }
    }

    #[test]
    fn an_unreachable_server_is_unavailable_with_a_retry_delay() {
        let status = status(McpError::Upstream(CallError::Connect("refused".into())));
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(reason(&status), "ERROR_REASON_MCP_SERVER_UNREACHABLE");
        assert_eq!(
            status
                .get_error_details()
                .retry_info()
                .map(|r| r.retry_delay),
            Some(Some(UNREACHABLE_RETRY_AFTER))
        );
    }

    #[test]
    fn a_full_session_pool_is_a_session_limit_with_its_retry_delay() {
        let status = status(McpError::Upstream(CallError::Exhausted {
            message: "sessions are busy".into(),
            retry_after: Duration::from_millis(500),
        }));
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(reason(&status), "ERROR_REASON_SESSION_LIMIT");
        assert_eq!(
            status
                .get_error_details()
                .retry_info()
                .map(|r| r.retry_delay),
            Some(Some(Duration::from_millis(500)))
        );
    }

    /// runs-service words these facts itself (`texts::mcp_error`): its
    /// tests hold the same sentences.
    #[test]
    fn every_server_failure_carries_its_facts_beside_the_message() {
        let cases = [
            (
                CallError::Timeout(Duration::from_millis(1500)),
                "MCP server: timed out after 1.5s",
            ),
            (
                CallError::TooLarge { limit: 1 << 20 },
                "MCP server: the result is larger than 1 MiB",
            ),
            (
                CallError::Connect("connection refused".into()),
                "MCP server: could not connect to the MCP server: connection refused",
            ),
            (
                CallError::Transport("reset".into()),
                "MCP server: the connection to the MCP server failed: reset",
            ),
            (
                CallError::Upstream {
                    code: -32602,
                    message: "missing topic".into(),
                },
                "MCP server: missing topic",
            ),
            (
                CallError::ListingTooLong("more than 10 pages".into()),
                "MCP server: more than 10 pages",
            ),
            (
                CallError::Exhausted {
                    message: "all sessions are busy".into(),
                    retry_after: Duration::from_millis(2500),
                },
                "all sessions are busy; retry in 2s",
            ),
        ];
        for (error, message) in cases {
            let status = status(McpError::Upstream(error.clone()));
            assert_eq!(status.message(), message, "{error:?}");
            let decoded = switchboard_server::ClientError::from(&status);
            assert!(decoded.server_facts.is_some(), "{error:?}");
        }
    }

    #[test]
    fn server_failures_keep_their_codes_and_say_the_server_failed() {
        let cases = [
            (
                CallError::Timeout(Duration::from_secs(1)),
                Code::DeadlineExceeded,
                "ERROR_REASON_MCP_SERVER_TIMEOUT",
            ),
            (
                CallError::TooLarge { limit: 10 },
                Code::ResourceExhausted,
                "ERROR_REASON_MCP_RESULT_TOO_LARGE",
            ),
            (
                CallError::Upstream {
                    code: INVALID_PARAMS,
                    message: "bad".into(),
                },
                Code::InvalidArgument,
                "ERROR_REASON_MCP_SERVER_ERROR",
            ),
            (
                CallError::Upstream {
                    code: RESOURCE_NOT_FOUND,
                    message: "gone".into(),
                },
                Code::NotFound,
                "ERROR_REASON_MCP_SERVER_ERROR",
            ),
            (
                CallError::Upstream {
                    code: -32000,
                    message: "no".into(),
                },
                Code::FailedPrecondition,
                "ERROR_REASON_MCP_SERVER_ERROR",
            ),
        ];
        for (error, code, expected) in cases {
            let status = status(McpError::Upstream(error));
            assert_eq!(status.code(), code, "{status:?}");
            assert_eq!(reason(&status), expected);
            assert!(status.message().starts_with("MCP server: "), "{status:?}");
        }
    }
}
