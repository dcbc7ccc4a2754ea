//! The soak benchmark: many concurrent runs, each making several tool calls,
//! across two replicas of each service on PostgreSQL (the fault suite's
//! fleet, tests/faults/), with one mcp-service replica killed and started
//! again in the middle. Reports runs completed and interrupted, p50/p99 run
//! time, each process's peak RSS, and the messages lost (announced by a
//! stream, not stored). See BENCHMARKS.md.
//!
//! `SOAK_RUNS=500 SOAK_CALLS=5 SOAK_SECONDS=180 cargo bench -p switchboard-e2e --bench soak`
//! (the defaults: 500 concurrent runs, each of 5 calls of 200 ms, started
//! again on their threads until 180 s have passed; the replica restarts at
//! half time).

#[allow(
    dead_code,
    reason = "shared with the fault suite, which uses all of it"
)]
#[path = "../faults/cluster.rs"]
mod cluster;
#[allow(
    dead_code,
    reason = "shared with the fault suite, which uses all of it"
)]
#[path = "../faults/fleet.rs"]
mod fleet;

use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_test_support::{authed, peak_rss_mib};

use crate::fleet::{Fleet, Hop, Workload};

/// What one run came to.
struct Outcome {
    thread_id: String,
    run_id: String,
    took: Duration,
    announced: Vec<String>,
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs_wanted = setting("SOAK_RUNS", 500);
    let workload = Workload {
        calls: setting("SOAK_CALLS", 5),
        sleep_ms: u64::try_from(setting("SOAK_SLEEP_MS", 200))?,
        // The production default: a loaded replica's heartbeats may lag.
        lease: Duration::from_secs(30),
        ..Workload::default()
    };
    let mut fleet = Fleet::start_over(workload, Hop::Plaintext).await?;
    let mut threads = Vec::with_capacity(runs_wanted);
    for index in 0..runs_wanted {
        threads.push((index % 2, new_thread(&fleet, index % 2).await?));
    }
    let soak = Duration::from_secs(u64::try_from(setting("SOAK_SECONDS", 180))?);
    eprintln!(
        "soak: {runs_wanted} concurrent runs × {} calls of {} ms, again and again for {soak:?}",
        workload.calls, workload.sleep_ms
    );
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(runs_wanted);
    for (replica, thread_id) in threads {
        let client = fleet.runs_client(replica).await?;
        let token = fleet.token.clone();
        tasks.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            while start.elapsed() < soak {
                outcomes.push(run_once(client.clone(), token.clone(), thread_id.clone()).await?);
            }
            anyhow::Ok(outcomes)
        }));
    }
    tokio::time::sleep(soak / 2).await;
    let restart = Instant::now();
    fleet.restart_mcp(0).await?;
    eprintln!(
        "soak: mcp-service replica 0 killed and serving again in {:?}",
        restart.elapsed()
    );
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(task.await??);
    }
    let wall = start.elapsed();
    report(&fleet, &outcomes, wall).await
}

async fn new_thread(fleet: &Fleet, replica: usize) -> anyhow::Result<String> {
    let mut client = fleet.runs_client(replica).await?;
    let thread = client
        .create_thread(authed(
            runs::CreateThreadRequest {
                agent_id: fleet.agent_id.clone(),
                title: "soak".into(),
                ..Default::default()
            },
            &fleet.token,
        ))
        .await?
        .into_inner()
        .thread
        .ok_or_else(|| anyhow::anyhow!("no thread"))?;
    Ok(thread.id)
}

async fn run_once(
    mut client: runs::runs_service_client::RunsServiceClient<tonic::transport::Channel>,
    token: String,
    thread_id: String,
) -> anyhow::Result<Outcome> {
    let request = runs::ExecuteRunRequest {
        thread_id: thread_id.clone(),
        input: Some(runs::execute_run_request::Input::UserMessage(
            runs::UserMessageInput {
                text: "sleep a few times".into(),
            },
        )),
        ..Default::default()
    };
    let start = Instant::now();
    let mut stream = client
        .execute_run(authed(request, &token))
        .await?
        .into_inner();
    let mut outcome = Outcome {
        thread_id,
        run_id: String::new(),
        took: Duration::ZERO,
        announced: Vec::new(),
    };
    while let Some(Ok(event)) = stream.next().await {
        outcome.run_id = event.run_id;
        if let Some(Event::MessageCreated(created)) = event.event
            && let Some(message) = created.message
        {
            outcome.announced.push(message.id);
        }
    }
    outcome.took = start.elapsed();
    Ok(outcome)
}

/// Every message id of a thread, page after page.
async fn stored_messages(
    client: &mut runs::runs_service_client::RunsServiceClient<tonic::transport::Channel>,
    fleet: &Fleet,
    thread_id: &str,
) -> anyhow::Result<HashSet<String>> {
    let mut ids = HashSet::new();
    let mut page_token = String::new();
    loop {
        let page = client
            .list_messages(authed(
                runs::ListMessagesRequest {
                    thread_id: thread_id.to_owned(),
                    page_size: 500,
                    page_token,
                },
                &fleet.token,
            ))
            .await?
            .into_inner();
        ids.extend(page.messages.into_iter().map(|m| m.id));
        if page.next_page_token.is_empty() {
            return Ok(ids);
        }
        page_token = page.next_page_token;
    }
}

async fn report(fleet: &Fleet, outcomes: &[Outcome], wall: Duration) -> anyhow::Result<()> {
    let mut client = fleet.runs_client(0).await?;
    let (mut completed, mut interrupted, mut other, mut lost) = (0, 0, 0, 0);
    let mut stored: HashMap<String, HashSet<String>> = HashMap::new();
    for outcome in outcomes {
        let run = client
            .get_run(authed(
                runs::GetRunRequest {
                    id: outcome.run_id.clone(),
                },
                &fleet.token,
            ))
            .await?
            .into_inner()
            .run
            .ok_or_else(|| anyhow::anyhow!("no run"))?;
        match run.status() {
            runs::RunStatus::Completed => completed += 1,
            runs::RunStatus::Interrupted => interrupted += 1,
            _ => other += 1,
        }
        if !stored.contains_key(&outcome.thread_id) {
            let ids = stored_messages(&mut client, fleet, &outcome.thread_id).await?;
            stored.insert(outcome.thread_id.clone(), ids);
        }
        let stored = &stored[&outcome.thread_id];
        lost += outcome
            .announced
            .iter()
            .filter(|id| !stored.contains(*id))
            .count();
    }
    let mut times: Vec<Duration> = outcomes.iter().map(|o| o.took).collect();
    times.sort();
    let at = |q: f64| {
        let index = ((times.len() as f64 - 1.0) * q).round() as usize;
        times.get(index).copied().unwrap_or_default()
    };
    println!(
        "| runs | completed | interrupted | other | p50 run | p99 run | wall | lost messages |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "| {} | {completed} | {interrupted} | {other} | {:.2} s | {:.2} s | {:.1} s | {lost} |",
        outcomes.len(),
        at(0.5).as_secs_f64(),
        at(0.99).as_secs_f64(),
        wall.as_secs_f64()
    );
    println!();
    println!("| process | peak RSS |");
    println!("| --- | --- |");
    for (name, replicas) in [("mcp-service", &fleet.mcp), ("runs-service", &fleet.runs)] {
        for (index, process) in replicas.iter().enumerate() {
            if let Some(process) = process {
                let rss = peak_rss_mib(process.child.id()).unwrap_or_default();
                println!("| {name} {index} | {rss} MiB |");
            }
        }
    }
    Ok(())
}
