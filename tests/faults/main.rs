//! The fault-injection suite: two replicas of each service as real
//! processes on one PostgreSQL server, the example MCP server as a process
//! and a scripted model. Each test starts a batch of concurrent runs (each
//! makes two slow tool calls), strikes one fault in the middle, and then
//! checks what [`checks::after_the_fault`] names: every run in a recorded end
//! state, no message lost or stored twice, no tool run more often than the
//! threads record calls to it, and every thread taking a new run.

mod checks;
mod cluster;
mod continued;
mod fleet;

use std::time::Duration;

use futures::StreamExt as _;
use switchboard_proto::{
    mcp::v1::{self as mcp, audit_service_client::AuditServiceClient},
    runs::v1::{self as runs, execute_run_response::Event},
};
use switchboard_test_support::authed;

use crate::fleet::{Fleet, Hop, RUNS_SPIFFE_ID, Workload};

/// Runs in each batch, one per thread, spread over both runs-service
/// replicas.
const RUNS: usize = 6;

/// What a client saw of one run.
#[derive(Debug, Default)]
pub struct Seen {
    pub thread_id: String,
    pub run_id: String,
    /// Ids of the messages the stream announced as stored.
    pub messages: Vec<String>,
}

/// Starts one run per new thread on alternating replicas; each task
/// collects its stream until it ends or breaks.
async fn start_batch(fleet: &Fleet) -> anyhow::Result<Vec<tokio::task::JoinHandle<Seen>>> {
    let mut handles = Vec::new();
    for index in 0..RUNS {
        let mut client = fleet.runs_client(index % 2).await?;
        let thread_id = client
            .create_thread(authed(
                runs::CreateThreadRequest {
                    agent_id: fleet.agent_id.clone(),
                    title: format!("faults {index}"),
                    ..Default::default()
                },
                &fleet.token,
            ))
            .await?
            .into_inner()
            .thread
            .ok_or_else(|| anyhow::anyhow!("no thread"))?
            .id;
        let request = authed(user_says(&thread_id, "sleep twice"), &fleet.token);
        let mut stream = client.execute_run(request).await?.into_inner();
        handles.push(tokio::spawn(async move {
            let mut seen = Seen {
                thread_id,
                ..Seen::default()
            };
            while let Some(Ok(event)) = stream.next().await {
                seen.run_id = event.run_id;
                if let Some(Event::MessageCreated(created)) = event.event
                    && let Some(message) = created.message
                {
                    seen.messages.push(message.id);
                }
            }
            seen
        }));
    }
    Ok(handles)
}

fn user_says(thread_id: &str, text: &str) -> runs::ExecuteRunRequest {
    runs::ExecuteRunRequest {
        thread_id: thread_id.to_owned(),
        input: Some(runs::execute_run_request::Input::UserMessage(
            runs::UserMessageInput { text: text.into() },
        )),
        ..Default::default()
    }
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// `kill -9` of a runs-service replica running half of the runs.
    RunsReplica,
    /// `kill -9` of an mcp-service replica, calls under way on it.
    McpReplica,
    /// The upstream MCP server killed mid-call, then started again.
    Upstream,
    /// PostgreSQL stopped as in a crash mid-run, then started again.
    Database,
}

async fn strike(fleet: &mut Fleet, fault: Fault) -> anyhow::Result<()> {
    match fault {
        Fault::RunsReplica => Fleet::kill(&mut fleet.runs, 0),
        Fault::McpReplica => Fleet::kill(&mut fleet.mcp, 0),
        Fault::Upstream => {
            fleet.kill_upstream();
            tokio::time::sleep(Duration::from_millis(500)).await;
            fleet.start_upstream().await?;
        }
        Fault::Database => {
            tokio::task::block_in_place(|| {
                fleet.cluster.crash_and_restart(Duration::from_secs(1))
            })?;
        }
    }
    Ok(())
}

/// Starts a batch, strikes `fault` while each run's first tool call is
/// under way, and collects what each client's stream saw.
async fn strike_mid_batch(fleet: &mut Fleet, fault: Fault) -> Vec<Seen> {
    let batch = start_batch(fleet).await.expect("the runs start");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    strike(fleet, fault).await.expect("the fault strikes");
    let mut seen = Vec::new();
    for handle in batch {
        let run = tokio::time::timeout(Duration::from_secs(120), handle)
            .await
            .expect("every stream ends")
            .expect("the stream task ends");
        seen.push(run);
    }
    seen
}

async fn survive(fault: Fault, hop: Hop) {
    let mut fleet = Fleet::start_over(Workload::default(), hop)
        .await
        .expect("the fleet starts");
    let seen = strike_mid_batch(&mut fleet, fault).await;
    let report = checks::after_the_fault(&fleet, &seen)
        .await
        .expect("nothing lost, nothing run twice");
    eprintln!("faults: {fault:?} over {hop:?}\n{report}");
    if hop == Hop::MutualTls {
        tool_calls_came_from_runs_service(&fleet)
            .await
            .expect("the tool calls were made over mutual TLS");
    }
}

/// Checks that mcp-service's audit trail names runs-service's certificate
/// as the calling service of every tool call: the calls came over mutual
/// TLS, before the fault and after it.
async fn tool_calls_came_from_runs_service(fleet: &Fleet) -> anyhow::Result<()> {
    let live = fleet
        .mcp
        .iter()
        .position(Option::is_some)
        .ok_or_else(|| anyhow::anyhow!("no mcp-service replica is up"))?;
    let mut audit = AuditServiceClient::new(fleet.mcp_replica(live).await?);
    let mut calls = 0;
    let mut page_token = String::new();
    loop {
        let request = mcp::ListAuditEventsRequest {
            page_size: 100,
            page_token,
            ..Default::default()
        };
        let page = audit
            .list_audit_events(authed(request, &fleet.token))
            .await?
            .into_inner();
        for event in &page.events {
            if event.action() == mcp::AuditAction::ToolCall {
                anyhow::ensure!(event.service == RUNS_SPIFFE_ID, "{event:?}");
                calls += 1;
            }
        }
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    anyhow::ensure!(calls > 0, "no tool call was audited");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_runs_service_replica_running_a_run() {
    survive(Fault::RunsReplica, Hop::Plaintext).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_mcp_service_replica_holding_a_session() {
    survive(Fault::McpReplica, Hop::Plaintext).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_upstream_mcp_server_mid_call() {
    survive(Fault::Upstream, Hop::Plaintext).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn restarting_postgresql_mid_run() {
    survive(Fault::Database, Hop::Plaintext).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_runs_service_replica_running_a_run_over_mutual_tls() {
    survive(Fault::RunsReplica, Hop::MutualTls).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_mcp_service_replica_holding_a_session_over_mutual_tls() {
    survive(Fault::McpReplica, Hop::MutualTls).await;
}
