//! What a run paused for an approval asks of the person at the terminal
//! (`tool_approval_required`): approve, deny, or go on once an approver
//! decided elsewhere.

use switchboard_proto::runs::v1::{self as runs, ToolApprovalDecision};

use super::{LineReader, asking::say, render};
use crate::{error::CliError, output::Output};

/// Shows each gated call and asks the person's word on it.
pub async fn decisions(
    asked: &[runs::ToolApprovalRequired],
    out: Output,
    lines: &mut LineReader,
) -> Result<Vec<ToolApprovalDecision>, CliError> {
    let mut decisions = Vec::with_capacity(asked.len());
    for call in asked {
        say(out, shown(call))?;
        let line = lines
            .read("  approve? y/n [comment], or press enter once an approver decided: ")
            .await?
            .ok_or_else(|| {
                CliError::Failed(format!(
                    "the run waits for a word on approval {}; none was given",
                    call.approval_id
                ))
            })?;
        decisions.push(decision(&call.tool_call_id, &line));
    }
    Ok(decisions)
}

fn shown(call: &runs::ToolApprovalRequired) -> String {
    let arguments = render::arguments_text(&call.arguments_json, None);
    let why = if call.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", call.reason)
    };
    let who = if call.requester_may_approve {
        format!(
            "you may decide it if you hold the role `{}`",
            call.approver_role
        )
    } else {
        format!(
            "an approver with the role `{}` decides it (switchboard approvals approve {})",
            call.approver_role, call.approval_id
        )
    };
    format!(
        "⏸ `{}` with {arguments} needs an approval (rule {}{why})\n  {who}",
        call.tool_name, call.rule
    )
}

/// A line as a word on one call: `y` or `yes` approves and `n` or `no`
/// denies, each with the rest of the line as the comment; anything else
/// goes on with what an approver decided.
fn decision(tool_call_id: &str, line: &str) -> ToolApprovalDecision {
    let line = line.trim();
    let (word, comment) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let approve = match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(true),
        "n" | "no" => Some(false),
        _ => None,
    };
    ToolApprovalDecision {
        tool_call_id: tool_call_id.to_owned(),
        approve,
        comment: if approve.is_some() {
            comment.trim().to_owned()
        } else {
            String::new()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_as_approve_deny_or_decided_elsewhere() {
        let cases = [
            ("y", Some(true), ""),
            ("YES  looks fine ", Some(true), "looks fine"),
            ("n not on Fridays", Some(false), "not on Fridays"),
            ("", None, ""),
            ("later", None, ""),
        ];
        for (line, approve, comment) in cases {
            let decided = decision("c1", line);
            assert_eq!(decided.approve, approve, "{line:?}");
            assert_eq!(decided.comment, comment, "{line:?}");
            assert_eq!(decided.tool_call_id, "c1");
        }
    }
}
