//! `ExecuteRun`: input parsing, and the idempotency key that keeps a repeated
//! request from starting a second run.
//!
//! The key's recorded result is the run id, written as soon as the run
//! starts. A repeat streams what the run is now: `run_started`, the pending
//! client tool calls when it paused for them, then `run_completed` or
//! `run_failed`; while the run is still going, the repeat is told to retry.

use std::time::Duration;

use futures::{StreamExt as _, stream};
use switchboard_proto::runs::v1 as pb;
use switchboard_server::{
    ApiError, Begun, FieldViolation, Idempotency, Refusal, fingerprint, parse_request_id,
};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, codegen::BoxStream};

use super::{convert::proto_event, error::status, id, manage::with_heartbeats};
use crate::domain::{
    entities::{Run, RunStatus},
    error::RunsError,
    events::{Envelope, RunEvent},
    ids::{RunId, ThreadId},
    input::{ApprovalChoice, ClientResult, RunInput, ToolAnswers},
    ports::Caller,
    run::Orchestrator,
    service::RunsService,
};

/// The method name idempotency keys of runs are scoped by.
const METHOD: &str = "ExecuteRun";

/// How long a repeat of a run that is still going should wait.
const RUNNING_RETRY_AFTER: Duration = Duration::from_secs(2);

fn invalid(violation: FieldViolation) -> Status {
    status(RunsError::from(violation))
}

/// The thread and input of a request.
fn parse(request: pb::ExecuteRunRequest) -> Result<(ThreadId, RunInput), Status> {
    // `detach_on_disconnect` is read by the caller.
    let thread_id: ThreadId = id("thread_id", &request.thread_id)?;
    let input = match request.input {
        None => {
            return Err(invalid(FieldViolation::new(
                "input",
                "a user message or client tool results is required",
            )));
        }
        Some(pb::execute_run_request::Input::UserMessage(message)) => {
            RunInput::UserMessage(message.text)
        }
        Some(pb::execute_run_request::Input::ClientToolResults(results)) => {
            RunInput::ClientToolResults {
                run_id: id::<RunId>("client_tool_results.run_id", &results.run_id)?,
                results: results
                    .results
                    .into_iter()
                    .map(|r| ClientResult {
                        tool_call_id: r.tool_call_id,
                        content: r.content,
                        is_error: r.is_error,
                    })
                    .collect(),
                answers: results
                    .input_answers
                    .into_iter()
                    .map(|a| ToolAnswers {
                        tool_call_id: a.tool_call_id,
                        responses: a.responses.into_iter().collect(),
                    })
                    .collect(),
                approvals: results
                    .approval_decisions
                    .into_iter()
                    .map(|d| ApprovalChoice {
                        tool_call_id: d.tool_call_id,
                        approve: d.approve,
                        comment: d.comment,
                    })
                    .collect(),
            }
        }
    };
    Ok((thread_id, input))
}

/// Starts a run, or replays the one a repeated request started.
pub(crate) async fn execute_run(
    orchestrator: &Orchestrator,
    service: &RunsService,
    idempotency: &Idempotency,
    caller: Caller,
    mut request: pb::ExecuteRunRequest,
    heartbeat: Duration,
) -> Result<BoxStream<pb::ExecuteRunResponse>, Status> {
    let detached = request.detach_on_disconnect;
    let request_id = std::mem::take(&mut request.request_id);
    let request_id = parse_request_id(&request_id).map_err(invalid)?;
    let fingerprint = fingerprint(&caller.principal.user_id, &request);
    let (thread_id, input) = parse(request)?;
    let Some(request_id) = request_id else {
        let events = orchestrator
            .start(caller, thread_id, input, detached)
            .await?;
        return Ok(into_stream(None, events, heartbeat));
    };
    let org_id = caller.principal.org_id.clone();
    let key = match idempotency
        .begin(&org_id, METHOD, request_id, &fingerprint)
        .await?
    {
        Begun::Replay(run_id) => {
            let run_id = String::from_utf8(run_id)
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("stored run id: {e}")))?;
            return replay(service, &caller, &run_id).await;
        }
        Begun::First(key) => key,
    };
    let mut events = match orchestrator.start(caller, thread_id, input, detached).await {
        Ok(events) => events,
        Err(error) => {
            idempotency.forget(&key).await;
            return Err(status(error));
        }
    };
    // The first event names the run; record it before anything else is sent
    // so a repeat from now on finds this run.
    let first = events.recv().await;
    match &first {
        Some(envelope) => {
            idempotency
                .finish(&key, envelope.run_id.to_string().as_bytes())
                .await?
        }
        None => idempotency.forget(&key).await,
    }
    Ok(into_stream(first, events, heartbeat))
}

fn into_stream(
    first: Option<Envelope>,
    events: tokio::sync::mpsc::Receiver<Envelope>,
    heartbeat: Duration,
) -> BoxStream<pb::ExecuteRunResponse> {
    let run_id = first
        .as_ref()
        .map(|e| e.run_id.to_string())
        .unwrap_or_default();
    let rest = ReceiverStream::new(events);
    let events = stream::iter(first)
        .chain(rest)
        .map(|envelope| Ok(proto_event(envelope)));
    with_heartbeats(Box::pin(events), heartbeat, run_id)
}

/// The events that tell a repeated request where its run stands.
async fn replay(
    service: &RunsService,
    caller: &Caller,
    run_id: &str,
) -> Result<BoxStream<pb::ExecuteRunResponse>, Status> {
    // The id the request's first execution stored.
    let run_id: RunId = id("run_id", run_id)?;
    let run = service.get_run(&caller.principal, run_id).await?;
    let events = replay_events(run).ok_or_else(|| {
        Status::from(ApiError::refused(
            Refusal::RequestInProgress {
                retry_after: RUNNING_RETRY_AFTER,
            },
            "the run this request_id started is still going; retry for its outcome",
        ))
    })?;
    Ok(Box::pin(stream::iter(events.into_iter().map(Ok))))
}

/// `None` while the run is still going.
fn replay_events(run: Run) -> Option<Vec<pb::ExecuteRunResponse>> {
    let mut events = vec![RunEvent::Started(run.clone())];
    match run.status {
        RunStatus::Running => return None,
        RunStatus::RequiresAction => {
            events.push(RunEvent::ClientToolCallsRequired(run.pending.clone()));
            events.push(RunEvent::Completed(run.clone()));
        }
        RunStatus::Completed | RunStatus::MaxSteps => events.push(RunEvent::Completed(run.clone())),
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Interrupted => {
            let error = run
                .error
                .clone()
                .unwrap_or_else(|| format!("the run ended {}", run.status.as_str()));
            events.push(RunEvent::Failed {
                run: run.clone(),
                error,
            });
        }
    }
    Some(
        events
            .into_iter()
            .zip(1..)
            .map(|(event, sequence)| {
                proto_event(Envelope {
                    run_id: run.id,
                    sequence,
                    event,
                })
            })
            .collect(),
    )
}
