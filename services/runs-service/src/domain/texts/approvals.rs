//! What the model reads of a tool call that was not made, or not made
//! again, though the model asked for it: a policy rule gated it behind an
//! approval that was denied or could not be used, or it may have run
//! already (its run continued on another replica). A call still waiting is
//! not told to the model: the run pauses for it.

use super::mcp_tool_failed;
use crate::domain::ports::ApprovalUnusable;

/// The call of `tool` was not approved; `comment` is the approver's words
/// (mcp-service's own sentence for the denial).
pub fn approval_denied(tool: &str, comment: &str) -> String {
    if comment.is_empty() {
        mcp_tool_failed(&format!("the call of `{tool}` was not approved"))
    } else {
        mcp_tool_failed(&format!("the call of `{tool}` was not approved: {comment}"))
    }
}

/// The approval of the call of `tool` could not be used, so the call was
/// not made now.
pub fn approval_unusable(tool: &str, why: ApprovalUnusable) -> String {
    match why {
        ApprovalUnusable::Used => mcp_tool_failed(&format!(
            "the approved call of `{tool}` was made once already and is not made again; its result was not kept. The call may have taken effect; check before asking for it again"
        )),
        ApprovalUnusable::Expired => mcp_tool_failed(&format!(
            "the call of `{tool}` was not made: its approval expired before it was used"
        )),
    }
}

/// The call of `tool` was in flight when the replica running the run
/// stopped, and no result of it was recorded: it may have taken effect, and
/// it is not made again (its tool is not listed as idempotent).
pub fn may_have_run(tool: &str) -> String {
    mcp_tool_failed(&format!(
        "the call of `{tool}` was interrupted before its result was recorded and is not made again. It may have taken effect; check before asking for it again"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denial_reads_as_mcp_service_words_it_with_or_without_a_comment() {
        assert_eq!(
            approval_denied("delete_repo", "use the archive instead"),
            "MCP tool execution failed: the call of `delete_repo` was not approved: use the archive instead"
        );
        assert_eq!(
            approval_denied("delete_repo", ""),
            "MCP tool execution failed: the call of `delete_repo` was not approved"
        );
    }

    #[test]
    fn an_unusable_approval_says_whether_the_call_may_have_run() {
        assert_eq!(
            approval_unusable("delete_repo", ApprovalUnusable::Used),
            "MCP tool execution failed: the approved call of `delete_repo` was made once already and is not made again; its result was not kept. The call may have taken effect; check before asking for it again"
        );
        assert_eq!(
            approval_unusable("delete_repo", ApprovalUnusable::Expired),
            "MCP tool execution failed: the call of `delete_repo` was not made: its approval expired before it was used"
        );
    }

    #[test]
    fn a_call_left_without_a_result_says_it_may_have_run() {
        assert_eq!(
            may_have_run("send_invoice"),
            "MCP tool execution failed: the call of `send_invoice` was interrupted before its result was recorded and is not made again. It may have taken effect; check before asking for it again"
        );
    }
}
