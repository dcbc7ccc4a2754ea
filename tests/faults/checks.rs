//! What must hold after any fault.

use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

use anyhow::{bail, ensure};
use futures::StreamExt as _;
use switchboard_proto::runs::v1::{self as runs, content_part::Part, execute_run_response::Event};
use switchboard_test_support::authed;

use crate::{
    Seen,
    fleet::{Fleet, STALE_AFTER},
    user_says,
};

/// Every run ends in a recorded end state; each thread's messages are
/// unique and include every one its stream announced; each tool call has at
/// most one result; the upstream ran the tool at most as often as the
/// threads record calls to it; every thread takes a new run, which
/// completes.
/// Returns what it found, a line per run and one for the tool calls.
pub async fn after_the_fault(fleet: &Fleet, seen: &[Seen]) -> anyhow::Result<String> {
    let mut report = String::new();
    let mut client = fleet.runs_client(fleet.live_runs_replica()).await?;
    let deadline = Instant::now() + STALE_AFTER * 4 + Duration::from_secs(30);
    for run in seen {
        ensure!(
            !run.run_id.is_empty(),
            "a run of {} never started",
            run.thread_id
        );
        let status = ended(&mut client, fleet, &run.run_id, deadline).await?;
        report.push_str(&format!("  run {} ended {status:?}\n", run.run_id));
    }
    let mut calls = 0;
    for run in seen {
        calls += check_messages(&mut client, fleet, run).await?;
    }
    let ran = tool_runs(fleet)?;
    ensure!(
        ran <= calls,
        "the upstream ran the tool {ran} times for {calls} recorded calls"
    );
    report.push_str(&format!(
        "  {calls} tool calls recorded, {ran} ran upstream\n"
    ));
    for run in seen {
        let request = authed(user_says(&run.thread_id, "once more"), &fleet.token);
        let events: Vec<_> = client
            .execute_run(request)
            .await?
            .into_inner()
            .collect()
            .await;
        let last = events.last().and_then(|e| e.as_ref().ok()).cloned();
        match last.and_then(|e| e.event) {
            Some(Event::RunCompleted(done))
                if done
                    .run
                    .as_ref()
                    .is_some_and(|r| r.status() == runs::RunStatus::Completed) => {}
            other => bail!("a new run on {} did not complete: {other:?}", run.thread_id),
        }
    }
    Ok(report)
}

/// Waits until run `id` is no longer running; its status.
async fn ended(
    client: &mut runs::runs_service_client::RunsServiceClient<tonic::transport::Channel>,
    fleet: &Fleet,
    id: &str,
    deadline: Instant,
) -> anyhow::Result<runs::RunStatus> {
    loop {
        let run = client
            .get_run(authed(
                runs::GetRunRequest { id: id.to_owned() },
                &fleet.token,
            ))
            .await?
            .into_inner()
            .run
            .ok_or_else(|| anyhow::anyhow!("no run"))?;
        if run.status() != runs::RunStatus::Running {
            return Ok(run.status());
        }
        if Instant::now() > deadline {
            bail!("run {id} is still RUNNING");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Checks one thread's messages; the number of tool calls it records.
async fn check_messages(
    client: &mut runs::runs_service_client::RunsServiceClient<tonic::transport::Channel>,
    fleet: &Fleet,
    run: &Seen,
) -> anyhow::Result<usize> {
    let messages = messages_of(client, fleet, &run.thread_id).await?;
    let ids: HashSet<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    ensure!(
        ids.len() == messages.len(),
        "a message of {} is stored twice",
        run.thread_id
    );
    for announced in &run.messages {
        ensure!(
            ids.contains(announced.as_str()),
            "message {announced} was announced and lost"
        );
    }
    let mut calls = HashSet::new();
    let mut results: HashMap<String, usize> = HashMap::new();
    for part in messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|c| c.part.as_ref())
    {
        match part {
            Part::ToolCall(call) => {
                ensure!(
                    calls.insert(call.id.clone()),
                    "tool call {} is stored twice",
                    call.id
                );
            }
            Part::ToolResult(result) => {
                *results.entry(result.tool_call_id.clone()).or_default() += 1;
            }
            _ => {}
        }
    }
    for (id, count) in &results {
        ensure!(*count == 1, "tool call {id} has {count} results");
        ensure!(
            calls.contains(id),
            "a result answers call {id}, which is not stored"
        );
    }
    Ok(calls.len())
}

/// The messages of thread `thread_id`, as the live replica lists them.
pub async fn thread_messages(fleet: &Fleet, thread_id: &str) -> anyhow::Result<Vec<runs::Message>> {
    let mut client = fleet.runs_client(fleet.live_runs_replica()).await?;
    messages_of(&mut client, fleet, thread_id).await
}

async fn messages_of(
    client: &mut runs::runs_service_client::RunsServiceClient<tonic::transport::Channel>,
    fleet: &Fleet,
    thread_id: &str,
) -> anyhow::Result<Vec<runs::Message>> {
    Ok(client
        .list_messages(authed(
            runs::ListMessagesRequest {
                thread_id: thread_id.to_owned(),
                page_size: 500,
                page_token: String::new(),
            },
            &fleet.token,
        ))
        .await?
        .into_inner()
        .messages)
}

/// How many times the upstream server ran the tool (its call log).
fn tool_runs(fleet: &Fleet) -> anyhow::Result<usize> {
    let log = std::fs::read_to_string(&fleet.calls_log).unwrap_or_default();
    Ok(log.lines().filter(|line| *line == "sleep").count())
}
