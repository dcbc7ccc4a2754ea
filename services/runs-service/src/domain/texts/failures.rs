//! A failed MCP tool call as the model reads it, worded here from the facts
//! mcp-service sends with each reason (`ExecuteToolResponse`): the sentences
//! are the ones mcp-service once wrote itself, so prompts and evaluations
//! read what they always read.

use std::time::Duration;

use switchboard_server::ByteSize;

use crate::domain::ports::{FailureFacts, ToolFailure};

/// The tool `tool` did not answer within `limit`, and mcp-service cancelled
/// the call.
pub fn tool_timed_out(tool: &str, limit: Duration) -> String {
    format!(
        "the tool `{tool}` did not answer within {}s and was cancelled",
        limit.as_secs_f64()
    )
}

/// The server wants the caller's authorization (OAuth), which the
/// integration does not hold; no facts come with it.
const AUTHORIZATION_NEEDED: &str = "the integration needs your authorization";

/// Why the call of `tool` failed, from its reason and facts, before
/// `mcp_tool_failed` wraps it; `None` when this version cannot word it (no
/// facts came, or the words are the tool's own) and mcp-service's
/// description is quoted instead.
pub(super) fn tool_failure(
    tool: &str,
    failure: ToolFailure,
    facts: Option<&FailureFacts>,
) -> Option<String> {
    match (failure, facts) {
        (_, Some(facts)) => Some(worded(tool, facts)),
        (ToolFailure::AuthorizationRequired, None) => Some(AUTHORIZATION_NEEDED.to_owned()),
        _ => None,
    }
}

/// An MCP server's failure reported for a resource read, a prompt or a
/// call mcp-service could not start: what the server did, or the limit of
/// mcp-service that kept the call from it.
pub(super) fn server_failed(facts: &FailureFacts) -> String {
    match facts {
        FailureFacts::LimitReached { .. } => described(facts),
        FailureFacts::Timeout(limit) => {
            format!("MCP server: timed out after {}s", limit.as_secs_f64())
        }
        _ => format!("MCP server: {}", described(facts)),
    }
}

fn worded(tool: &str, facts: &FailureFacts) -> String {
    match facts {
        FailureFacts::Timeout(limit) => tool_timed_out(tool, *limit),
        _ => described(facts),
    }
}

/// The facts of every reason but a timeout, whose words depend on what
/// timed out.
fn described(facts: &FailureFacts) -> String {
    match facts {
        FailureFacts::Timeout(limit) => format!("timed out after {}s", limit.as_secs_f64()),
        FailureFacts::TooLarge { limit_bytes } => {
            format!("the result is larger than {}", ByteSize(*limit_bytes))
        }
        FailureFacts::Unreachable { detail } => {
            format!("could not connect to the MCP server: {detail}")
        }
        FailureFacts::ConnectionLost { detail } => {
            format!("the connection to the MCP server failed: {detail}")
        }
        FailureFacts::JsonRpc { message, .. } => message.clone(),
        FailureFacts::ListingBound { detail } => detail.clone(),
        FailureFacts::LimitReached {
            detail,
            retry_after,
        } => format!("{detail}; retry in {}s", retry_after.as_secs().max(1)),
    }
}
