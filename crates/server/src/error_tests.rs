//! The status encoding of `ApiError`.
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
        retry_after: Duration::from_secs(1),
    });
    assert_eq!(status.code(), Code::ResourceExhausted);
    let details = status.get_error_details();
    let retry = details.retry_info().expect("a RetryInfo detail");
    assert_eq!(retry.retry_delay, Some(Duration::from_secs(1)));
}

#[test]
fn a_refusal_names_what_happened_and_keeps_its_message() {
    let status = Status::from(ApiError::refused(
        Refusal::IntegrationDisabled,
        "integration 1 is disabled",
    ));
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert_eq!(status.message(), "integration 1 is disabled");
    let details = status.get_error_details();
    let info = details.error_info().expect("an ErrorInfo detail");
    assert_eq!(info.reason, "ERROR_REASON_INTEGRATION_DISABLED");
    assert_eq!(info.domain, ERROR_DOMAIN);
    assert!(details.retry_info().is_none(), "enabling it is not a retry");
}

#[test]
fn a_refusal_that_a_retry_can_cure_carries_its_delay() {
    let status = Status::from(ApiError::refused(
        Refusal::McpServerUnreachable {
            retry_after: Duration::from_secs(2),
        },
        "could not connect",
    ));
    assert_eq!(status.code(), Code::Unavailable);
    let details = status.get_error_details();
    assert_eq!(
        details.error_info().expect("an ErrorInfo detail").reason,
        "ERROR_REASON_MCP_SERVER_UNREACHABLE"
    );
    assert_eq!(
        details
            .retry_info()
            .expect("a RetryInfo detail")
            .retry_delay,
        Some(Duration::from_secs(2))
    );
}

#[test]
fn every_refusal_has_its_own_reason_and_never_the_bare_code() {
    let delay = Duration::from_secs(1);
    let all = [
        Refusal::IntegrationDisabled,
        Refusal::ThreadBusy,
        Refusal::AuthorizationRequired,
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
    ];
    for refusal in all {
        let (code, reason, _) = refusal.status_parts();
        assert_ne!(reason, ErrorReason::Unspecified, "{refusal:?}");
        // The reason that only repeats the code is what clients had before.
        assert_ne!(format!("{reason:?}"), format!("{code:?}"), "{refusal:?}");
        assert_ne!(code, Code::Ok, "{refusal:?}");
    }
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
