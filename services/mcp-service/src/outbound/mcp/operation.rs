//! One operation on an upstream session: a tool call's rounds and task,
//! what it can fail with, and whether a failed request provably never left.

use std::time::Duration;

use rmcp::ServiceError;
use serde::Serialize;

use rmcp::model::InputRequiredResult;

use crate::domain::{
    outcome::{InputRequired, Outcome, ToolOutcome},
    ports::{CallError, ToolCall},
};
use crate::outbound::mcp::{
    discovery::{ByteCounter, ListFailure},
    elicitation::Answerer,
    input_required::{self, Round, ToolAnswer},
    progress::ProgressRoutes,
    sessions::Live,
    tasks::{self, TaskEnd, TaskPolling, TaskStart},
};

/// Whether `error` proves the request never reached the server of `live`,
/// so that making it again cannot run anything twice: the session's
/// transport answers (see [`Attachment::never_delivered`]).
///
/// [`Attachment::never_delivered`]: crate::outbound::mcp::transport::Attachment::never_delivered
pub(super) fn never_delivered(live: &Live, error: &ServiceError) -> bool {
    live.transport.never_delivered(error)
}

/// A request's last round as its outcome: its result, or the server's
/// `input_required` for the caller.
pub(super) fn outcome<T>(round: Round<T>) -> Outcome<T> {
    match round {
        Round::Complete(result) => Outcome::Complete(result),
        Round::InputRequired(asked) => Outcome::InputRequired(asked_of(asked)),
    }
}

/// `outcome` when it is within `limit` bytes (its result, or its requests
/// for input, counted as JSON as it is written out, without holding the
/// encoded copy).
pub(super) fn sized<T: Serialize>(
    limit: usize,
    outcome: Outcome<T>,
) -> Result<Outcome<T>, CallError> {
    let mut counter = ByteCounter(0);
    let written = match &outcome {
        Outcome::Complete(result) => serde_json::to_writer(&mut counter, result),
        Outcome::InputRequired(asked) => serde_json::to_writer(&mut counter, &asked.requests),
    };
    let size = written.map_or(usize::MAX, |()| counter.0);
    if size > limit {
        return Err(CallError::TooLarge { limit });
    }
    Ok(outcome)
}

/// What an operation on a session can fail with.
pub(super) enum OpFailure {
    Service(ServiceError),
    /// A failure after the server started the tool (as a task): the
    /// operation is never made again, whatever the error.
    Unrepeatable(ServiceError),
    Call(CallError),
}

/// One tool call on a session: its rounds, then the task the server runs
/// the tool as, when it does; or the caller's task, resumed. Whether the
/// call completed or asks the caller for input is decided here, once.
pub(super) async fn tool_call(
    (peer, routes): (&rmcp::service::Peer<rmcp::RoleClient>, &ProgressRoutes),
    answerer: &Answerer,
    polling: (TaskPolling, Duration),
    call: ToolCall,
) -> Result<ToolOutcome, OpFailure> {
    let policy = answerer.policy();
    let start = match call.task_id.clone() {
        Some(task_id) => TaskStart::resumed(task_id, call.answers.responses.clone()),
        None => match input_required::call_tool(peer, answerer, routes, call).await? {
            Round::Complete(ToolAnswer::Result(result)) => return Ok(Outcome::Complete(result)),
            Round::InputRequired(asked) => return Ok(Outcome::InputRequired(asked_of(asked))),
            Round::Complete(ToolAnswer::Task(task)) => TaskStart::created(task),
        },
    };
    let ended = tasks::follow(peer, policy, polling, start)
        .await
        .map_err(OpFailure::Unrepeatable)?;
    Ok(match ended {
        TaskEnd::Complete(result) => Outcome::Complete(result),
        // The caller sends the task's id back with the answers.
        TaskEnd::InputRequired { task_id, requests } => Outcome::InputRequired(InputRequired {
            requests,
            request_state: None,
            task_id: Some(task_id),
        }),
    })
}

/// A server's `input_required` answer as what the caller is asked.
pub(super) fn asked_of(result: InputRequiredResult) -> InputRequired {
    InputRequired {
        requests: result.input_requests.unwrap_or_default(),
        request_state: result.request_state,
        task_id: None,
    }
}

impl From<CallError> for OpFailure {
    fn from(error: CallError) -> Self {
        Self::Call(error)
    }
}

impl From<ServiceError> for OpFailure {
    fn from(error: ServiceError) -> Self {
        Self::Service(error)
    }
}

impl From<ListFailure> for OpFailure {
    fn from(failure: ListFailure) -> Self {
        match failure {
            ListFailure::Service(error) => Self::Service(error),
            ListFailure::Limit(message) => Self::Call(CallError::ListingTooLong(message)),
        }
    }
}
