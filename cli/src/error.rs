//! What can go wrong, each as one line for the terminal and an exit code.

use std::{error::Error as _, fmt};

use tonic::{Code, Status};
use tonic_types::StatusExt as _;

/// Which service answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// mcp-service.
    Mcp,
    /// runs-service.
    Runs,
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Mcp => "mcp-service",
            Self::Runs => "runs-service",
        })
    }
}

/// A failed command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad flags, files or configuration.
    #[error("{0}")]
    Usage(String),
    /// No token was given.
    #[error("no token: pass --token, set SWITCHBOARD_TOKEN or put `token` in the config file")]
    NoToken,
    /// A name that matches nothing.
    #[error("{0}")]
    NotFound(String),
    /// A service refused or failed the call.
    #[error("{service}: {}", describe(status))]
    Grpc {
        /// The service called.
        service: Service,
        /// Its answer.
        status: Box<Status>,
    },
    /// The operation ran and failed (a run, a validation).
    #[error("{0}")]
    Failed(String),
    /// The user pressed Ctrl-C.
    #[error("interrupted")]
    Interrupted,
    /// Writing to the terminal or reading a file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl CliError {
    /// A closure turning a service's `Status` into an error.
    pub fn from(service: Service) -> impl Fn(Status) -> Self {
        move |status| Self::Grpc {
            service,
            status: Box::new(status),
        }
    }

    /// Whether this is stdout closed by a reader (`| head`), which is no failure.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Io(error) if error.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// The process exit code (documented in `switchboard --help`).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Failed(_) | Self::Io(_) => 1,
            Self::Usage(_) => 2,
            Self::NoToken => 4,
            Self::NotFound(_) => 5,
            Self::Interrupted => 130,
            Self::Grpc { status, .. } => match status.code() {
                Code::Unavailable | Code::DeadlineExceeded => 3,
                Code::Unauthenticated | Code::PermissionDenied => 4,
                Code::NotFound => 5,
                Code::InvalidArgument
                | Code::FailedPrecondition
                | Code::AlreadyExists
                | Code::ResourceExhausted
                | Code::OutOfRange => 6,
                Code::Cancelled => 130,
                _ => 1,
            },
        }
    }
}

/// The canonical gRPC name of a code.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// `CODE (REASON): message`, on one line, with the retry delay when the
/// service gave one and the root cause of a connection failure.
fn describe(status: &Status) -> String {
    let details = status.get_error_details();
    let mut line = code_name(status.code()).to_owned();
    if let Some(info) = details.error_info() {
        line.push_str(&format!(" ({})", info.reason));
    }
    let message = one_line(status.message());
    if !message.is_empty() {
        line.push_str(": ");
        line.push_str(&message);
    }
    if let Some(delay) = details.retry_info().and_then(|retry| retry.retry_delay) {
        line.push_str(&format!(
            " (retry after {})",
            humantime::format_duration(delay)
        ));
    }
    // A connection failure's useful part (connection refused, no route) is
    // at the bottom of the source chain.
    if details.error_info().is_none() {
        let mut source = status.source();
        let mut root = None;
        while let Some(error) = source {
            root = Some(error.to_string());
            source = error.source();
        }
        if let Some(root) = root.filter(|root| !line.contains(root.as_str())) {
            line.push_str(&format!(" ({})", one_line(&root)));
        }
    }
    line
}

/// Collapses line breaks so that an error stays one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use tonic_types::ErrorDetails;

    use super::*;

    #[test]
    fn a_status_reads_as_code_reason_and_message_on_one_line() {
        let details = ErrorDetails::with_error_info(
            "ERROR_REASON_NOT_FOUND",
            "switchboard.dev",
            HashMap::new(),
        );
        let status = Status::with_error_details(Code::NotFound, "agent a\nnot found", details);
        let error = CliError::from(Service::Runs)(status);
        assert_eq!(
            error.to_string(),
            "runs-service: NOT_FOUND (ERROR_REASON_NOT_FOUND): agent a not found"
        );
        assert_eq!(error.exit_code(), 5);
    }

    #[test]
    fn a_retry_delay_is_named() {
        let mut details = ErrorDetails::with_error_info(
            "ERROR_REASON_ORGANIZATION_RATE_LIMIT",
            "switchboard.dev",
            HashMap::new(),
        );
        details.set_retry_info(Some(std::time::Duration::from_secs(2)));
        let status = Status::with_error_details(Code::ResourceExhausted, "slow down", details);
        let error = CliError::from(Service::Mcp)(status);
        assert!(error.to_string().ends_with("slow down (retry after 2s)"));
        assert_eq!(error.exit_code(), 6);
    }
}
