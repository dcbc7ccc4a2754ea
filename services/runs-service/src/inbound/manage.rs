//! Run management: `ListRuns`, `CancelRun`, `WatchRun`, and the heartbeats
//! that keep a quiet run stream alive; `AcceptToolDefinition`, the answer
//! to a run's changed tool.

use std::{pin::Pin, time::Duration};

use chrono::NaiveDate;
use futures::{Stream, StreamExt as _, stream};
use switchboard_proto::runs::v1 as pb;
use switchboard_server::FieldViolation;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, codegen::BoxStream};

use super::{
    convert::{decode_cursor, encode_cursor, page_size, proto_event, proto_run},
    error::status,
    id,
};
use crate::domain::{
    error::RunsError,
    ids::{RunId, ThreadId},
    pins::is_digest,
    ports::Caller,
    run::Orchestrator,
    service::RunsService,
    tools::{MAX_TOOL_NAME, valid_tool_name},
    usage::{MAX_USAGE_DAYS, UsageGroup, UsagePeriod, UsageQuery},
};

fn invalid(violation: FieldViolation) -> Status {
    status(RunsError::from(violation))
}

/// `ListRuns`.
pub(crate) async fn list_runs(
    service: &RunsService,
    caller: &Caller,
    request: pb::ListRunsRequest,
) -> Result<pb::ListRunsResponse, Status> {
    let thread_id: ThreadId = id("thread_id", &request.thread_id)?;
    let limit = page_size("page_size", request.page_size).map_err(invalid)?;
    let before = decode_cursor("page_token", &request.page_token).map_err(invalid)?;
    let (runs, next) = service
        .list_runs(&caller.principal, thread_id, before, limit)
        .await?;
    Ok(pb::ListRunsResponse {
        runs: runs.iter().map(proto_run).collect(),
        next_page_token: encode_cursor(next),
    })
}

/// `AcceptToolDefinition`: each field checked here, the rest decided by
/// the service.
pub(crate) async fn accept_tool_definition(
    service: &RunsService,
    caller: &Caller,
    request: pb::AcceptToolDefinitionRequest,
) -> Result<pb::AcceptToolDefinitionResponse, Status> {
    let thread_id: ThreadId = id("thread_id", &request.thread_id)?;
    if !valid_tool_name(&request.tool_name) {
        return Err(invalid(FieldViolation::new(
            "tool_name",
            format!("must be a tool name: 1 to {MAX_TOOL_NAME} ASCII letters, digits, '_' or '-'"),
        )));
    }
    if !is_digest(&request.digest) {
        return Err(invalid(FieldViolation::new(
            "digest",
            "must be a SHA-256 digest: 64 lowercase hex digits (the event's new_digest)",
        )));
    }
    service
        .accept_tool_definition(
            &caller.principal,
            thread_id,
            &request.tool_name,
            &request.digest,
        )
        .await?;
    Ok(pb::AcceptToolDefinitionResponse {})
}

/// `GetUsage`: the days parsed and bounded, the rest decided by the
/// service.
pub(crate) async fn get_usage(
    service: &RunsService,
    caller: &Caller,
    request: pb::GetUsageRequest,
) -> Result<pb::GetUsageResponse, Status> {
    let day = |field: &str, text: &str| {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| invalid(FieldViolation::new(field, "must be a day, YYYY-MM-DD")))
    };
    let from = day("from_day", &request.from_day)?;
    let to = day("to_day", &request.to_day)?;
    let span = (to - from).num_days();
    if !(0..=MAX_USAGE_DAYS).contains(&span) {
        return Err(invalid(FieldViolation::new(
            "to_day",
            format!("must be from_day or up to {MAX_USAGE_DAYS} days after it"),
        )));
    }
    let group = match request.group() {
        pb::UsageGroup::Agent => UsageGroup::Agent,
        pb::UsageGroup::User => UsageGroup::User,
        pb::UsageGroup::Unspecified => UsageGroup::Organization,
    };
    let period = match request.period() {
        pb::UsagePeriod::Month => UsagePeriod::Month,
        pb::UsagePeriod::Unspecified => UsagePeriod::Day,
    };
    let query = UsageQuery {
        org_id: String::new(),
        from,
        to,
        group,
        period,
    };
    let rows = service.usage(&caller.principal, query).await?;
    Ok(pb::GetUsageResponse {
        rows: rows
            .into_iter()
            .map(|row| pb::UsageRow {
                period: row.period,
                agent_id: row.agent_id,
                user_id: row.user_id,
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                tool_calls: row.tool_calls,
                runs: row.runs,
            })
            .collect(),
    })
}

/// `CancelRun`.
pub(crate) async fn cancel_run(
    service: &RunsService,
    orchestrator: &Orchestrator,
    caller: &Caller,
    request: pb::CancelRunRequest,
) -> Result<pb::CancelRunResponse, Status> {
    let run_id: RunId = id("id", &request.id)?;
    let run = service.get_run(&caller.principal, run_id).await?;
    let run = orchestrator.cancel(&run).await?;
    Ok(pb::CancelRunResponse {
        run: Some(proto_run(&run)),
    })
}

/// `WatchRun`.
pub(crate) async fn watch_run(
    service: &RunsService,
    orchestrator: &Orchestrator,
    caller: &Caller,
    request: pb::WatchRunRequest,
    heartbeat: Duration,
) -> Result<BoxStream<pb::WatchRunResponse>, Status> {
    let run_id: RunId = id("id", &request.id)?;
    if request.from_sequence < 0 {
        return Err(invalid(FieldViolation::new(
            "from_sequence",
            "must not be negative",
        )));
    }
    let run = service.get_run(&caller.principal, run_id).await?;
    let events = ReceiverStream::new(orchestrator.watch(&run, request.from_sequence))
        .map(|event| event.map(proto_event).map_err(status));
    let events = with_heartbeats(Box::pin(events), heartbeat, run_id.into());
    Ok(Box::pin(events.map(|event| {
        event.map(|event| pb::WatchRunResponse { event: Some(event) })
    })))
}

type Events = Pin<Box<dyn Stream<Item = Result<pb::ExecuteRunResponse, Status>> + Send>>;

/// `events`, with a heartbeat event whenever nothing was sent for `every`,
/// so that a proxy's idle timeout does not end a quiet stream (a run
/// waiting on a long tool call).
pub(crate) fn with_heartbeats(
    events: Events,
    every: Duration,
    run_id: String,
) -> BoxStream<pb::ExecuteRunResponse> {
    Box::pin(stream::unfold(
        (events, run_id),
        move |(mut events, mut run_id)| async move {
            match tokio::time::timeout(every, events.next()).await {
                Ok(Some(event)) => {
                    if let Ok(event) = &event {
                        run_id.clone_from(&event.run_id);
                    }
                    Some((event, (events, run_id)))
                }
                Ok(None) => None,
                Err(_) => {
                    let heartbeat = pb::ExecuteRunResponse {
                        run_id: run_id.clone(),
                        sequence: 0,
                        event: Some(pb::execute_run_response::Event::Heartbeat(
                            pb::RunHeartbeat {},
                        )),
                    };
                    Some((Ok(heartbeat), (events, run_id)))
                }
            }
        },
    ))
}
