//! mcp-service's statuses as the domain's errors: the one place runs-service
//! reads their codes and reasons, through the decoder that mirrors how the
//! server encoded them.

use std::time::Duration;

use switchboard_server::{ClientError, ErrorKind, Refusal, ServerFacts};
use tonic::{Code, Status};

use crate::domain::ports::{ApprovalUnusable, DecideError, FailureFacts, McpCallError};

/// mcp-service's status as the domain's error: the one place its codes are
/// read, through the decoder that mirrors how the server encoded them.
pub(super) fn failure(status: &Status) -> McpCallError {
    let ClientError {
        code,
        kind,
        message,
        server_facts,
    } = ClientError::from(status);
    let timed_out = matches!(code, Code::DeadlineExceeded | Code::Cancelled);
    if let (Some(facts), false) = (server_facts, timed_out) {
        return McpCallError::Server {
            facts: server_failure(facts, kind.retry_after()),
            message,
        };
    }
    match (code, kind) {
        (Code::DeadlineExceeded | Code::Cancelled, _) => McpCallError::Timeout,
        (Code::Unavailable, _) => McpCallError::Unavailable(message),
        (Code::ResourceExhausted, kind) => McpCallError::Exhausted {
            retry_after: kind.retry_after(),
            message,
        },
        (Code::NotFound, _) => McpCallError::NotFound(message),
        // Without a URL the caller cannot authorize it (an
        // organization-wide connection only an admin makes): an ordinary
        // refusal whose message says so.
        (
            Code::FailedPrecondition,
            ErrorKind::AuthorizationRequired {
                authorization_url: Some(url),
            },
        ) => McpCallError::AuthorizationRequired { url },
        (Code::FailedPrecondition, ErrorKind::Refused(Refusal::ApprovalPending)) => {
            McpCallError::ApprovalPending
        }
        (Code::FailedPrecondition, ErrorKind::Refused(Refusal::ApprovalUsed)) => {
            McpCallError::ApprovalUnusable {
                why: ApprovalUnusable::Used,
                message,
            }
        }
        (Code::FailedPrecondition, ErrorKind::Refused(Refusal::ApprovalExpired)) => {
            McpCallError::ApprovalUnusable {
                why: ApprovalUnusable::Expired,
                message,
            }
        }
        (
            Code::FailedPrecondition
            | Code::PermissionDenied
            | Code::InvalidArgument
            | Code::Unauthenticated,
            _,
        ) => McpCallError::Refused(message),
        _ => McpCallError::Failed(message),
    }
}

/// ApprovalService's status for a decision as the domain's: a decision
/// that found the approval settled is not a failure of the run's caller.
pub(super) fn decide_failure(status: &Status) -> DecideError {
    let error = ClientError::from(status);
    match (error.code, &error.kind) {
        (
            Code::FailedPrecondition,
            ErrorKind::Refused(Refusal::ApprovalDecided | Refusal::ApprovalExpired),
        ) => DecideError::Settled,
        (Code::PermissionDenied, _) => DecideError::NotAllowed(error.message),
        (Code::NotFound, _) => DecideError::NotFound(error.message),
        (Code::InvalidArgument, _) => DecideError::Invalid(error.message),
        _ => DecideError::Call(failure(status)),
    }
}

/// The facts of an MCP server's failure as the domain's, with the status's
/// retry delay for a limit of mcp-service.
fn server_failure(facts: ServerFacts, retry_after: Option<Duration>) -> FailureFacts {
    match facts {
        ServerFacts::Timeout(limit) => FailureFacts::Timeout(limit),
        ServerFacts::TooLarge { limit_bytes } => FailureFacts::TooLarge {
            limit_bytes: usize::try_from(limit_bytes).unwrap_or(usize::MAX),
        },
        ServerFacts::Unreachable { detail } => FailureFacts::Unreachable { detail },
        ServerFacts::ConnectionLost { detail } => FailureFacts::ConnectionLost { detail },
        ServerFacts::JsonRpc { code, message } => FailureFacts::JsonRpc { code, message },
        ServerFacts::ListingBound { detail } => FailureFacts::ListingBound { detail },
        ServerFacts::LimitReached { detail } => FailureFacts::LimitReached {
            detail,
            retry_after: retry_after.unwrap_or_default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use switchboard_server::ApiError;

    use super::*;

    #[test]
    fn a_status_with_server_facts_is_a_server_failure_unless_it_timed_out() {
        use switchboard_server::{ApiError, Refusal};
        let busy = ApiError::server_failed(
            Refusal::SessionLimit {
                retry_after: Duration::from_secs(3),
            },
            ServerFacts::LimitReached {
                detail: "all sessions are busy".into(),
            },
            "all sessions are busy; retry in 3s",
        );
        assert_eq!(
            failure(&Status::from(busy)),
            McpCallError::Server {
                facts: FailureFacts::LimitReached {
                    detail: "all sessions are busy".into(),
                    retry_after: Duration::from_secs(3),
                },
                message: "all sessions are busy; retry in 3s".into(),
            }
        );
        // A timeout keeps its own handling (the call is recorded as timed
        // out), whatever facts came with it.
        let slow = ApiError::server_failed(
            Refusal::McpServerTimeout,
            ServerFacts::Timeout(Duration::from_secs(1)),
            "MCP server: timed out after 1s",
        );
        assert_eq!(failure(&Status::from(slow)), McpCallError::Timeout);
    }

    #[test]
    fn a_presented_approval_that_cannot_run_says_why() {
        let refused = |refusal| Status::from(ApiError::refused(refusal, "words"));
        assert_eq!(
            failure(&refused(Refusal::ApprovalPending)),
            McpCallError::ApprovalPending
        );
        assert_eq!(
            failure(&refused(Refusal::ApprovalUsed)),
            McpCallError::ApprovalUnusable {
                why: ApprovalUnusable::Used,
                message: "words".into(),
            }
        );
        assert_eq!(
            failure(&refused(Refusal::ApprovalExpired)),
            McpCallError::ApprovalUnusable {
                why: ApprovalUnusable::Expired,
                message: "words".into(),
            }
        );
        // Another requester's approval is a refusal like any other.
        assert_eq!(
            failure(&refused(Refusal::ApprovalOtherRequester)),
            McpCallError::Refused("words".into())
        );
    }

    #[test]
    fn a_decision_on_a_settled_approval_is_not_the_callers_failure() {
        let refused = |refusal| Status::from(ApiError::refused(refusal, "words"));
        assert!(matches!(
            decide_failure(&refused(Refusal::ApprovalDecided)),
            DecideError::Settled
        ));
        assert!(matches!(
            decide_failure(&refused(Refusal::ApprovalExpired)),
            DecideError::Settled
        ));
        let forbidden = Status::from(ApiError::PermissionDenied("not an approver".into()));
        assert!(matches!(
            decide_failure(&forbidden),
            DecideError::NotAllowed(message) if message == "not an approver"
        ));
        let down = Status::unavailable("gone");
        assert!(matches!(
            decide_failure(&down),
            DecideError::Call(McpCallError::Unavailable(_))
        ));
    }
}
