//! A thread pins the MCP tools it offers; when the server changes a pinned
//! tool between two runs of the thread, the second run says so
//! (`tool_definition_changed`, replayed by WatchRun) and applies the
//! agent's `tool_drift`: refused, the model is not offered the tool and a
//! call to it is answered that it is withheld; accepted, the model gets the
//! new definition and the thread pins it; asked, the tool is withheld until
//! the application accepts the digest the event named.

use futures::StreamExt as _;
use switchboard_example_mcp_server::CHANGED_ECHO_DESCRIPTION;
use switchboard_proto::{mcp::v1 as mcp, runs::v1 as runs};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{authed, token};
use tonic::Code;
use tonic_types::StatusExt as _;

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

/// The application's answer to a change: AcceptToolDefinition as `token`.
async fn accept(
    w: &mut World,
    token: &str,
    thread_id: &str,
    tool_name: &str,
    digest: &str,
) -> Result<(), tonic::Status> {
    w.runs_client
        .accept_tool_definition(authed(
            runs::AcceptToolDefinitionRequest {
                thread_id: thread_id.to_owned(),
                tool_name: tool_name.to_owned(),
                digest: digest.to_owned(),
            },
            token,
        ))
        .await
        .map(|_| ())
}

/// The fields a bad request names.
fn fields(status: &tonic::Status) -> Vec<String> {
    status
        .get_error_details()
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_asked_change_is_withheld_until_the_application_accepts_its_digest() {
    let mut w = world_with(
        runs::ToolDriftPolicy::Ask,
        vec![
            Turn::Text("first".into()),
            Turn::Text("second".into()),
            Turn::Text("third".into()),
            Turn::Text("fourth".into()),
        ],
    )
    .await;
    final_run(&w.say("one").await);
    change_echo(&mut w).await;
    let events = w.say("two").await;
    // The run went on without the tool.
    assert_eq!(
        final_run(&events).status,
        i32::from(runs::RunStatus::Completed)
    );
    let seen = changes(&events);
    assert_eq!(seen.len(), 1, "one change: {seen:?}");
    let change = seen[0].clone();
    assert_eq!(change.applied, i32::from(runs::ToolDriftPolicy::Ask));
    assert_eq!(change.thread_id, w.thread_id);
    assert_eq!(change.new_digest.len(), 64);
    assert!(!tools_offered(&w.model, 1).iter().any(|name| name == ECHO));
    assert_eq!(changes(&replayed(&mut w, &events).await), seen);

    // A digest other than the waiting one pins nothing.
    let (thread, admin) = (w.thread_id.clone(), w.token.clone());
    let mut stale = change.new_digest.clone();
    let last = if stale.ends_with('0') { "1" } else { "0" };
    stale.replace_range(63.., last);
    let refused = accept(&mut w, &admin, &thread, ECHO, &stale)
        .await
        .expect_err("another digest");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused.message().contains(&stale) && refused.message().contains(&change.new_digest),
        "names the mismatch: {}",
        refused.message()
    );
    // Another organization's caller does not learn the thread exists.
    let elsewhere = token("org-other", "user-e2e", &["admin"]);
    let hidden = accept(&mut w, &elsewhere, &thread, ECHO, &change.new_digest)
        .await
        .expect_err("another organization");
    assert_eq!(hidden.code(), Code::NotFound);
    let third = w.say("three").await;
    assert_eq!(changes(&third).len(), 1, "still withheld, still reported");
    assert!(!tools_offered(&w.model, 2).iter().any(|name| name == ECHO));

    accept(&mut w, &admin, &thread, ECHO, &change.new_digest)
        .await
        .expect("accepted");
    let fourth = w.say("four").await;
    final_run(&fourth);
    assert!(changes(&fourth).is_empty(), "no change after acceptance");
    assert_eq!(
        description_offered(&w, 3, ECHO).as_deref(),
        Some(CHANGED_ECHO_DESCRIPTION)
    );
    // Answered once: the same answer again finds nothing waiting.
    let again = accept(&mut w, &admin, &thread, ECHO, &change.new_digest)
        .await
        .expect_err("nothing waiting");
    assert_eq!(again.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn a_bad_answer_to_a_change_names_its_field() {
    let mut w = world_with(runs::ToolDriftPolicy::Ask, Vec::new()).await;
    let (thread, admin) = (w.thread_id.clone(), w.token.clone());
    let digest = "a".repeat(64);
    let long_name = "n".repeat(65);
    for (thread_id, tool, digest, field) in [
        ("not-a-uuid", ECHO, digest.as_str(), "thread_id"),
        (thread.as_str(), "", digest.as_str(), "tool_name"),
        (
            thread.as_str(),
            long_name.as_str(),
            digest.as_str(),
            "tool_name",
        ),
        (thread.as_str(), ECHO, &digest[..63], "digest"),
        (thread.as_str(), ECHO, &"A".repeat(64), "digest"),
    ] {
        let status = accept(&mut w, &admin, thread_id, tool, digest)
            .await
            .expect_err("invalid");
        assert_eq!(status.code(), Code::InvalidArgument, "{field}");
        assert_eq!(fields(&status), [field]);
    }
    // At the limit the name is valid: nothing waits for it.
    let at_limit = "n".repeat(64);
    let status = accept(&mut w, &admin, &thread, &at_limit, &digest)
        .await
        .expect_err("nothing waiting");
    assert_eq!(status.code(), Code::FailedPrecondition);
}
