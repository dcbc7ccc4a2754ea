//! Resuming a paused run: what the caller sent matched to what the run
//! waits for, the approvals the caller decides decided first, and the run
//! back to running with the client's results stored in one write.

use std::collections::HashSet;

use switchboard_db::now_millis;

use super::{
    context::{Resumed, ResumedWith, Resumption, message, numbered},
    start::RunStarter,
};
use crate::domain::{
    entities::{InputAnswers, Message, Part, PendingCall, Role, Run, RunStatus, Thread},
    error::RunsError,
    input::{ApprovalChoice, ClientResult},
    model::ToolCall,
    ports::{ApprovalDecision, Caller, DecideError},
};

const NOT_PAUSED: &str = "the run is not waiting for client tool results or answers";

impl RunStarter {
    /// A paused run back to running, with the client's results stored; the
    /// calls that waited for answers or an approval are returned, to be
    /// made again by the run. The approvals the caller decides are decided
    /// before anything is stored: a decision refused leaves the run paused.
    pub(super) async fn resume(
        &self,
        caller: &Caller,
        thread: &Thread,
        sent: Resumption,
    ) -> Result<(Run, Vec<Message>, Vec<Resumed>), RunsError> {
        let mut run = self
            .repo
            .get_run(thread.id, sent.run_id)
            .await?
            .ok_or(RunsError::NotFound("run"))?;
        if run.status != RunStatus::RequiresAction {
            return Err(RunsError::FailedPrecondition(NOT_PAUSED.into()));
        }
        let resumed = resumed_calls(&run.pending, &sent)?;
        self.decide(caller, &run.pending, &sent.approvals).await?;
        let now = now_millis();
        run.status = RunStatus::Running;
        run.updated_at = now;
        let parts = answered(&run, &sent.results);
        run.pending.clear();
        let mut input = Vec::new();
        if !parts.is_empty() {
            input.push(message(&run, Role::Tool, parts, now));
        }
        // The move back to running and the results are one write: a crash
        // between them would leave calls without results.
        let seqs = self
            .repo
            .resume_run_with(&run, &input)
            .await?
            .ok_or_else(|| RunsError::FailedPrecondition(NOT_PAUSED.into()))?;
        numbered(&mut input, seqs);
        Ok((run, input, resumed))
    }

    /// Decides, as the caller, each approval they gave a decision for. One
    /// decided already keeps its decision (the call then goes on with it).
    async fn decide(
        &self,
        caller: &Caller,
        pending: &[PendingCall],
        approvals: &[ApprovalChoice],
    ) -> Result<(), RunsError> {
        for choice in approvals {
            let Some(approve) = choice.approve else {
                continue;
            };
            let Some(approval) = pending
                .iter()
                .find(|call| call.id == choice.tool_call_id)
                .and_then(|call| call.approval.as_ref())
            else {
                continue;
            };
            let decision = ApprovalDecision {
                approval_id: &approval.asked.id,
                approve,
                comment: &choice.comment,
            };
            match self.tools.decide_approval(caller, decision).await {
                Ok(()) | Err(DecideError::Settled) => {}
                Err(DecideError::NotAllowed(message)) => {
                    return Err(RunsError::NotAllowed(format!(
                        "the approval of tool call {} was not decided: {message}",
                        choice.tool_call_id
                    )));
                }
                Err(DecideError::NotFound(message)) => {
                    return Err(RunsError::FailedPrecondition(format!(
                        "the approval of tool call {} is gone: {message}",
                        choice.tool_call_id
                    )));
                }
                Err(DecideError::Invalid(message)) => {
                    return Err(RunsError::invalid(
                        "client_tool_results.approval_decisions",
                        message,
                    ));
                }
                Err(DecideError::Call(error)) => {
                    return Err(RunsError::Unavailable(format!(
                        "the approval of tool call {} could not be decided: {error}",
                        choice.tool_call_id
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Matches what the caller sent to what the run waits for: every client
/// call needs a result, every call whose server asked needs answers, every
/// call an approval holds needs an entry in `approval_decisions`.
fn resumed_calls(pending: &[PendingCall], sent: &Resumption) -> Result<Vec<Resumed>, RunsError> {
    let given: HashSet<&str> = sent
        .results
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .collect();
    let mut missing = Vec::new();
    let mut resumed = Vec::new();
    for call in pending {
        let again = |with| Resumed {
            call: ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
            with,
        };
        if let Some(input) = &call.input {
            match sent.answers.iter().find(|a| a.tool_call_id == call.id) {
                None => missing.push(call.id.clone()),
                Some(answers) => resumed.push(again(ResumedWith::Answers {
                    input: input.clone(),
                    answers: InputAnswers {
                        responses: answers.responses.clone(),
                        request_state: input.asked.request_state.clone(),
                        task_id: input.asked.task_id.clone(),
                    },
                })),
            }
        } else if let Some(approval) = &call.approval {
            if sent.approvals.iter().any(|a| a.tool_call_id == call.id) {
                resumed.push(again(ResumedWith::Approval(approval.clone())));
            } else {
                missing.push(call.id.clone());
            }
        } else if !given.contains(call.id.as_str()) {
            missing.push(call.id.clone());
        }
    }
    if missing.is_empty() {
        Ok(resumed)
    } else {
        Err(RunsError::invalid(
            "client_tool_results",
            format!(
                "results, answers or approval decisions are missing for tool calls {}",
                missing.join(", ")
            ),
        ))
    }
}

/// The client's results as tool results, in the order the model called.
fn answered(run: &Run, results: &[ClientResult]) -> Vec<Part> {
    run.pending
        .iter()
        .filter(|pending| pending.is_client())
        .filter_map(|pending| {
            results
                .iter()
                .find(|r| r.tool_call_id == pending.id)
                .map(|r| Part::ToolResult {
                    tool_call_id: pending.id.clone(),
                    name: pending.name.clone(),
                    content: r.content.clone(),
                    is_error: r.is_error,
                })
        })
        .collect()
}
