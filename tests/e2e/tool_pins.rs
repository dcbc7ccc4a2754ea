//! A thread pins the MCP tools it offers; when the server changes a pinned
//! tool between two runs of the thread, the second run says so
//! (`tool_definition_changed`, replayed by WatchRun) and applies the
//! agent's `tool_drift`: refused, the model is not offered the tool and a
//! call to it is answered that it is withheld; accepted, the model gets the
//! new definition and the thread pins it.

use futures::StreamExt as _;
use switchboard_example_mcp_server::CHANGED_ECHO_DESCRIPTION;
use switchboard_proto::{mcp::v1 as mcp, runs::v1 as runs};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;

use crate::world::{Options, World, final_run, tool_messages_sent, tools_offered, world};

const ECHO: &str = "example__echo";

fn echo_call(id: &str) -> Turn {
    Turn::ToolCalls(vec![ScriptedToolCall::new(
        id,
        ECHO,
        r#"{"text": "hi"}"#.to_owned(),
    )])
}

/// A world whose agent has `policy`, playing `turns`.
async fn world_with(policy: runs::ToolDriftPolicy, turns: Vec<Turn>) -> World {
    world(Options {
        turns,
        agent: Box::new(move |agent| agent.tool_drift = policy.into()),
        ..Options::default()
    })
    .await
}

/// The server changes `echo`, and mcp-service lists it anew.
async fn change_echo(w: &mut World) {
    assert!(w.upstream.change_echo_description().await);
    w.mcp_client
        .discover(authed(
            mcp::DiscoverRequest {
                integration_id: w.integration_id.clone(),
                bypass_cache: true,
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect("discovered again");
}

fn changes(events: &[runs::ExecuteRunResponse]) -> Vec<runs::ToolDefinitionChanged> {
    use runs::execute_run_response::Event;
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::ToolDefinitionChanged(change)) => Some(change.clone()),
            _ => None,
        })
        .collect()
}

/// The description of `name` in the model's request `index`.
fn description_offered(w: &World, index: usize, name: &str) -> Option<String> {
    w.model.requests()[index]["tools"]
        .as_array()?
        .iter()
        .find(|t| t["function"]["name"] == name)
        .and_then(|t| t["function"]["description"].as_str())
        .map(str::to_owned)
}

/// What WatchRun replays of the run that streamed `events`.
async fn replayed(
    w: &mut World,
    events: &[runs::ExecuteRunResponse],
) -> Vec<runs::ExecuteRunResponse> {
    let stream = w
        .runs_client
        .watch_run(authed(
            runs::WatchRunRequest {
                id: events[0].run_id.clone(),
                from_sequence: 0,
            },
            &w.token,
        ))
        .await
        .expect("watching starts")
        .into_inner();
    stream
        .map(|e| e.expect("an event").event.expect("an event"))
        .collect()
        .await
}

#[tokio::test]
async fn a_refused_changed_tool_is_reported_and_never_offered() {
    let mut w = world_with(
        runs::ToolDriftPolicy::Refuse,
        vec![
            Turn::Text("first".into()),
            echo_call("c1"),
            Turn::Text("done".into()),
            Turn::Text("third".into()),
        ],
    )
    .await;
    final_run(&w.say("one").await);
    assert_eq!(
        description_offered(&w, 0, ECHO).as_deref(),
        Some("Returns the given text.")
    );

    change_echo(&mut w).await;
    let events = w.say("two").await;
    final_run(&events);
    let seen = changes(&events);
    assert_eq!(seen.len(), 1, "one change: {seen:?}");
    let change = &seen[0];
    assert_eq!(change.tool_name, ECHO);
    assert_eq!(change.integration_id, w.integration_id);
    assert!(change.description_changed);
    assert!(!change.input_schema_changed);
    assert_eq!(change.old_description, "Returns the given text.");
    assert_eq!(change.new_description, CHANGED_ECHO_DESCRIPTION);
    assert_eq!(change.old_input_schema_json, change.new_input_schema_json);
    assert_eq!(change.applied, i32::from(runs::ToolDriftPolicy::Refuse));
    // Neither the new text nor the old is offered; the other tools are.
    let offered = tools_offered(&w.model, 1);
    assert!(!offered.iter().any(|name| name == ECHO), "{offered:?}");
    assert!(offered.iter().any(|name| name == "example__add"));
    assert!(
        !w.model.requests()[1]
            .to_string()
            .contains("collector.invalid"),
        "the changed description never reaches the model"
    );
    assert_eq!(
        tool_messages_sent(&w.model, 2),
        [format!(
            "The tool {ECHO} is withheld: its server changed its description or input schema since this conversation first used it, and the change has not been accepted. Do not call it again; tell the user if you need it."
        )]
    );
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        0,
        "no call reached the server"
    );
    assert_eq!(
        changes(&replayed(&mut w, &events).await),
        seen,
        "stored and replayed"
    );

    // The pin stays: the next run refuses the tool again.
    let third = w.say("three").await;
    assert_eq!(changes(&third).len(), 1);
    assert!(!tools_offered(&w.model, 3).iter().any(|name| name == ECHO));
}

#[tokio::test]
async fn an_accepted_change_is_offered_and_pinned() {
    let mut w = world_with(
        runs::ToolDriftPolicy::Accept,
        vec![
            Turn::Text("first".into()),
            Turn::Text("second".into()),
            Turn::Text("third".into()),
        ],
    )
    .await;
    final_run(&w.say("one").await);
    change_echo(&mut w).await;
    let events = w.say("two").await;
    final_run(&events);
    let seen = changes(&events);
    assert_eq!(seen.len(), 1, "one change: {seen:?}");
    assert_eq!(seen[0].applied, i32::from(runs::ToolDriftPolicy::Accept));
    assert_eq!(
        description_offered(&w, 1, ECHO).as_deref(),
        Some(CHANGED_ECHO_DESCRIPTION)
    );
    // Pinned again: the next run sees no change.
    let third = w.say("three").await;
    assert!(changes(&third).is_empty());
    assert_eq!(
        description_offered(&w, 2, ECHO).as_deref(),
        Some(CHANGED_ECHO_DESCRIPTION)
    );
}

#[tokio::test]
async fn an_agent_without_a_setting_refuses_a_change() {
    let mut w = world_with(
        runs::ToolDriftPolicy::Unspecified,
        vec![Turn::Text("first".into()), Turn::Text("second".into())],
    )
    .await;
    final_run(&w.say("one").await);
    change_echo(&mut w).await;
    let events = w.say("two").await;
    final_run(&events);
    let seen = changes(&events);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].applied, i32::from(runs::ToolDriftPolicy::Refuse));
    assert!(!tools_offered(&w.model, 1).iter().any(|name| name == ECHO));
}
