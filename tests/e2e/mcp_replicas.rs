//! runs-service over several mcp-service replicas: a conversation's calls
//! meet in one replica, on one upstream session, and a replica that goes
//! away costs no run, runs no tool twice and moves the conversation to one
//! new session.

use std::net::SocketAddr;

use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_server::RunningServer;

use crate::world::{Options, World, final_run, tool_messages_sent, world};

/// One run's turns: a call to the example server's counter, then an answer
/// quoting it.
fn counting_run(index: usize) -> [Turn; 2] {
    [
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            format!("c{index}"),
            "example__counter",
            "{}",
        )]),
        Turn::FromToolResults("count {last_tool_result}".into()),
    ]
}

fn tool_statuses(events: &[runs::ExecuteRunResponse]) -> Vec<runs::ToolCallStatus> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::ToolCallFinished(f)) => Some(f.status()),
            _ => None,
        })
        .collect()
}

fn address(server: &RunningServer) -> SocketAddr {
    server
        .url()
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .parse()
        .expect("a socket address")
}

/// Takes the mcp-service replica the thread's calls go to out of the world
/// (the other stays), as runs-service ranks them.
fn owner_of_the_thread(w: &mut World) -> RunningServer {
    let other = w.mcp_replicas.pop().expect("a second replica");
    let order =
        switchboard_runs_service::replica_order(&w.thread_id, &[address(&w._mcp), address(&other)]);
    if order[0] == address(&other) {
        other
    } else {
        std::mem::replace(&mut w._mcp, other)
    }
}

/// The counter values of the thread's tool results, in order, as the
/// model's last request holds them.
fn counted(w: &World) -> Vec<u64> {
    let last = w.model.requests().len() - 1;
    tool_messages_sent(&w.model, last)
        .iter()
        .map(|text| text.trim().parse().expect("a count"))
        .collect()
}

#[tokio::test]
async fn a_thread_keeps_one_upstream_session_until_its_replica_goes_away() {
    keeps_one_session_until_its_replica_goes_away(false).await;
}

#[tokio::test]
async fn a_thread_keeps_one_upstream_session_until_its_replica_goes_away_over_mutual_tls() {
    keeps_one_session_until_its_replica_goes_away(true).await;
}

/// Nine rounds on one thread, its replica stopped after the third; over
/// mutual TLS between the services when `mutual_tls`.
async fn keeps_one_session_until_its_replica_goes_away(mutual_tls: bool) {
    const BEFORE: usize = 3;
    const AFTER: usize = 6;
    let mut w = world(Options {
        turns: (0..BEFORE + AFTER).flat_map(counting_run).collect(),
        mcp_replicas: 1,
        mutual_tls,
        ..Options::default()
    })
    .await;
    for round in 0..BEFORE + AFTER {
        if round == BEFORE {
            let owner = owner_of_the_thread(&mut w);
            owner.stop().await.expect("the replica stops");
        }
        let events = w.say("count once more").await;
        let run = final_run(&events);
        assert_eq!(
            run.status(),
            runs::RunStatus::Completed,
            "round {round}: {run:?}"
        );
        assert_eq!(
            tool_statuses(&events),
            [runs::ToolCallStatus::Succeeded],
            "round {round}: {events:?}"
        );
    }
    // One session counted 1, 2, 3; the thread's next call opened one new
    // session on the other replica, which counted from 1 again.
    let expected: Vec<u64> = (1..=BEFORE as u64).chain(1..=AFTER as u64).collect();
    assert_eq!(counted(&w), expected);
    // Every call the thread records reached the upstream server once.
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        u64::try_from(BEFORE + AFTER).expect("small")
    );
}
