//! Each failed tool call the model reads, worded from its facts word for
//! word, and mcp-service's description quoted only when no facts came.

use std::time::Duration;

use super::tool_output;
use crate::domain::ports::{FailureFacts, ToolFailure, ToolOutput};

/// What the model reads for a failure with `reason` and `facts`, next to a
/// description that must not be quoted when the facts are there.
fn read(reason: ToolFailure, facts: Option<FailureFacts>) -> (String, bool) {
    let output = ToolOutput {
        failure: Some(reason),
        error_message: "mcp-service's description".into(),
        facts,
        ..ToolOutput::default()
    };
    tool_output("deploy", &output)
}

fn text(reason: ToolFailure, facts: FailureFacts) -> String {
    let (text, is_error) = read(reason, Some(facts));
    assert!(is_error, "{text}");
    text
}

#[test]
fn an_oversized_result_is_worded_from_the_limit_in_bytes() {
    let too_large = |limit_bytes| {
        text(
            ToolFailure::TooLarge,
            FailureFacts::TooLarge { limit_bytes },
        )
    };
    assert_eq!(
        too_large(4 * 1024 * 1024),
        "MCP tool execution failed: the result is larger than 4 MiB"
    );
    assert_eq!(
        too_large(64 * 1024),
        "MCP tool execution failed: the result is larger than 64 KiB"
    );
    assert_eq!(
        too_large(1000),
        "MCP tool execution failed: the result is larger than 1000 bytes"
    );
}

#[test]
fn a_connection_failure_quotes_the_connection_s_words() {
    assert_eq!(
        text(
            ToolFailure::Unreachable,
            FailureFacts::Unreachable {
                detail: "connection refused".into()
            }
        ),
        "MCP tool execution failed: could not connect to the MCP server: connection refused"
    );
    assert_eq!(
        text(
            ToolFailure::ConnectionLost,
            FailureFacts::ConnectionLost {
                detail: "stream closed".into()
            }
        ),
        "MCP tool execution failed: the connection to the MCP server failed: stream closed"
    );
    // Words the server controls are quoted, not interpreted.
    assert_eq!(
        text(
            ToolFailure::Unreachable,
            FailureFacts::Unreachable {
                detail: String::new()
            }
        ),
        "MCP tool execution failed: could not connect to the MCP server: "
    );
}

#[test]
fn a_protocol_error_is_the_server_s_message_or_the_bound_it_passed() {
    assert_eq!(
        text(
            ToolFailure::Protocol,
            FailureFacts::JsonRpc {
                code: -32602,
                message: "Unknown tool: teleport".into()
            }
        ),
        "MCP tool execution failed: Unknown tool: teleport"
    );
    assert_eq!(
        text(
            ToolFailure::Protocol,
            FailureFacts::ListingBound {
                detail: "discovery stopped: the server's listings are larger than 2 KiB (at tools)"
                    .into()
            }
        ),
        "MCP tool execution failed: discovery stopped: the server's listings are larger than 2 KiB (at tools)"
    );
}

#[test]
fn a_reached_limit_of_mcp_service_says_when_to_retry_in_whole_seconds() {
    let reached = |retry_after| {
        text(
            ToolFailure::LimitReached,
            FailureFacts::LimitReached {
                detail: "the organization has 4 open MCP sessions, its limit, and all are in use"
                    .into(),
                retry_after,
            },
        )
    };
    assert_eq!(
        reached(Duration::from_secs(3)),
        "MCP tool execution failed: the organization has 4 open MCP sessions, its limit, and all are in use; retry in 3s"
    );
    // Under a second is still "retry in 1s", never "0s".
    assert_eq!(
        reached(Duration::from_millis(500)),
        "MCP tool execution failed: the organization has 4 open MCP sessions, its limit, and all are in use; retry in 1s"
    );
    assert_eq!(
        reached(Duration::from_millis(2900)),
        "MCP tool execution failed: the organization has 4 open MCP sessions, its limit, and all are in use; retry in 2s"
    );
}

#[test]
fn a_missing_authorization_needs_no_facts() {
    assert_eq!(
        read(ToolFailure::AuthorizationRequired, None),
        (
            "MCP tool execution failed: the integration needs your authorization".to_owned(),
            true
        )
    );
}

#[test]
fn without_facts_mcp_service_s_description_is_quoted() {
    // An mcp-service older than the facts, or a reason this version does
    // not know.
    for reason in [
        ToolFailure::TooLarge,
        ToolFailure::Unreachable,
        ToolFailure::ConnectionLost,
        ToolFailure::Protocol,
        ToolFailure::LimitReached,
        ToolFailure::Other,
    ] {
        assert_eq!(
            read(reason, None),
            (
                "MCP tool execution failed: mcp-service's description".to_owned(),
                true
            ),
            "{reason:?}"
        );
    }
}
