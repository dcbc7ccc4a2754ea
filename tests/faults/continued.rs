//! Runs whose agent continues them (`recovery` CONTINUE): a runs-service
//! replica killed with `kill -9` in the middle of three tool steps, and the
//! other replica takes its runs over and finishes them from what they
//! recorded. Nothing is stored twice, no call is made twice, the call in
//! flight is told to the model as one that may have run, and a watcher
//! sees one sequence from `run_started` through `run_continued` to
//! `run_completed`.

use std::collections::HashSet;

use anyhow::{bail, ensure};
use futures::StreamExt as _;
use switchboard_proto::runs::v1::{self as runs, content_part::Part, execute_run_response::Event};
use switchboard_test_support::authed;

use crate::{
    Fault, Seen, checks,
    fleet::{Fleet, Hop, Workload},
    strike_mid_batch,
};

/// What a watcher saw of one continued run.
#[derive(Debug, Default)]
struct Watched {
    continued: bool,
    may_have_run: Vec<String>,
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_runs_service_replica_continues_its_runs_on_the_other() {
    let workload = Workload {
        calls: 3,
        recovery: runs::RunRecovery::Continue,
        ..Workload::default()
    };
    let mut fleet = Fleet::start_over(workload, Hop::Plaintext)
        .await
        .expect("the fleet starts");
    let seen = strike_mid_batch(&mut fleet, Fault::RunsReplica).await;
    let report = checks::after_the_fault(&fleet, &seen)
        .await
        .expect("nothing lost, nothing run twice");
    eprintln!("faults: continued runs\n{report}");
    let mut continued = 0;
    for run in &seen {
        let status = run_status(&fleet, &run.run_id).await.expect("the run");
        assert_eq!(status, runs::RunStatus::Completed, "{report}");
        let watched = watch(&fleet, run).await.expect("one coherent sequence");
        if watched.continued {
            continued += 1;
            assert!(
                !watched.may_have_run.is_empty(),
                "the call in flight when the replica died is unresolved"
            );
            told_may_have_run(&fleet, run, &watched.may_have_run)
                .await
                .expect("the model read that the call may have run");
        }
    }
    // The killed replica ran every other run of the batch.
    assert_eq!(continued, seen.len() / 2, "{report}");
}

async fn run_status(fleet: &Fleet, id: &str) -> anyhow::Result<runs::RunStatus> {
    let mut client = fleet.runs_client(fleet.live_runs_replica()).await?;
    let run = client
        .get_run(authed(runs::GetRunRequest { id: id.into() }, &fleet.token))
        .await?
        .into_inner()
        .run
        .ok_or_else(|| anyhow::anyhow!("no run"))?;
    Ok(run.status())
}

/// Watches `run` from its start on the live replica and checks the
/// sequence: rising numbers, one start, at most one continuation, every
/// started tool call finished once after its last start, one end.
async fn watch(fleet: &Fleet, run: &Seen) -> anyhow::Result<Watched> {
    let mut client = fleet.runs_client(fleet.live_runs_replica()).await?;
    let request = runs::WatchRunRequest {
        id: run.run_id.clone(),
        from_sequence: 1,
    };
    let mut stream = client
        .watch_run(authed(request, &fleet.token))
        .await?
        .into_inner();
    let mut watched = Watched::default();
    let (mut last, mut started, mut ended) = (0, 0, 0);
    let mut open = HashSet::new();
    let mut finished = HashSet::new();
    while let Some(item) = stream.next().await {
        let Some(event) = item?.event else { continue };
        let Some(kind) = event.event else { continue };
        if matches!(kind, Event::Heartbeat(_)) {
            continue;
        }
        ensure!(event.sequence > last, "{} after {last}", event.sequence);
        last = event.sequence;
        match kind {
            Event::RunStarted(_) => started += 1,
            Event::RunContinued(continued) => {
                ensure!(!watched.continued, "continued twice");
                ensure!(event.sequence > 1 << 32, "{}", event.sequence);
                watched.continued = true;
                watched.may_have_run = continued.unresolved_tool_call_ids;
                // What was open when the replica died is resolved below.
                open.clear();
            }
            Event::ToolCallStarted(call) => {
                open.insert(call.tool_call_id);
            }
            Event::ToolCallFinished(call) => {
                let unresolved = watched.may_have_run.contains(&call.tool_call_id);
                ensure!(
                    open.remove(&call.tool_call_id) || unresolved,
                    "{} finished without starting",
                    call.tool_call_id
                );
                ensure!(
                    finished.insert(call.tool_call_id.clone()),
                    "{} finished twice",
                    call.tool_call_id
                );
                if unresolved {
                    ensure!(call.status() == runs::ToolCallStatus::MayHaveRun);
                }
            }
            Event::RunCompleted(_) | Event::RunFailed(_) => ended += 1,
            _ => {}
        }
    }
    ensure!(started == 1, "{started} starts");
    ensure!(ended == 1, "{ended} ends");
    ensure!(open.is_empty(), "calls never finished: {open:?}");
    Ok(watched)
}

/// The thread holds one result for each unresolved call, telling the model
/// it may have run.
async fn told_may_have_run(fleet: &Fleet, run: &Seen, ids: &[String]) -> anyhow::Result<()> {
    let messages = checks::thread_messages(fleet, &run.thread_id).await?;
    for id in ids {
        let result = messages
            .iter()
            .flat_map(|m| &m.content)
            .find_map(|c| match &c.part {
                Some(Part::ToolResult(result)) if &result.tool_call_id == id => Some(result),
                _ => None,
            });
        match result {
            Some(result) if result.is_error && result.content.contains("may have taken effect") => {
            }
            other => bail!("call {id} has no may-have-run result: {other:?}"),
        }
    }
    Ok(())
}
