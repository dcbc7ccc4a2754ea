//! runs-service over several mcp-service replicas: calls spread across them,
//! and a replica that goes away costs no run and runs no tool twice.

use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{Options, final_run, world};

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

#[tokio::test]
async fn runs_go_on_when_an_mcp_service_replica_goes_away() {
    const BEFORE: usize = 3;
    const AFTER: usize = 6;
    let mut w = world(Options {
        turns: (0..BEFORE + AFTER).flat_map(counting_run).collect(),
        mcp_replicas: 1,
        ..Options::default()
    })
    .await;
    for round in 0..BEFORE + AFTER {
        if round == BEFORE {
            let replica = w.mcp_replicas.pop().expect("a second replica");
            replica.stop().await.expect("the replica stops");
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
    // Every call the thread records reached the upstream server once.
    let recorded = w
        .messages()
        .await
        .iter()
        .filter(|m| m.role() == runs::MessageRole::Tool)
        .count();
    assert_eq!(recorded, BEFORE + AFTER);
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        u64::try_from(recorded).expect("small")
    );
}
