//! ExecuteRun end to end: a scripted model using the tools of a real MCP
//! server through runs-service and mcp-service.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{TEST_JWT_SECRET, TestDb, authed, grpc::free_port};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::world::{
    Options, admin, create_integration, final_run, tool_messages_sent, tools_offered, world,
};

fn call(id: &str, name: &str, arguments: &str) -> ScriptedToolCall {
    ScriptedToolCall::new(id, name, arguments)
}

fn finished(events: &[runs::ExecuteRunResponse]) -> Vec<(String, runs::ToolCallStatus, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::ToolCallFinished(f)) => {
                Some((f.tool_name.clone(), f.status(), f.result.clone()))
            }
            _ => None,
        })
        .collect()
}

fn text_of(events: &[runs::ExecuteRunResponse]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::TextDelta(d)) => Some(d.text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_run_calls_a_prefixed_mcp_tool_and_answers_with_its_result() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![call(
                "c1",
                "example__echo",
                r#"{"text":"north sold 120 units"}"#,
            )]),
            Turn::FromToolResults("The tool said: {last_tool_result}".into()),
        ],
        ..Options::default()
    })
    .await;
    let events = w.say("How did the north do?").await;
    let run = final_run(&events);
    assert_eq!(run.status(), runs::RunStatus::Completed);
    assert_eq!(run.steps, 2);
    assert!(matches!(events[0].event, Some(Event::RunStarted(_))));
    assert!(
        events
            .windows(2)
            .all(|w| w[1].sequence == w[0].sequence + 1),
        "numbered in order"
    );
    assert_eq!(
        finished(&events),
        [(
            "example__echo".to_owned(),
            runs::ToolCallStatus::Succeeded,
            "north sold 120 units".to_owned()
        )]
    );
    assert_eq!(text_of(&events), "The tool said: north sold 120 units");
    assert!(tools_offered(&w.model, 0).contains(&"example__echo".to_owned()));
    assert_eq!(tool_messages_sent(&w.model, 1), ["north sold 120 units"]);
    let binding = run
        .tool_bindings
        .iter()
        .find(|b| b.tool_name == "example__echo")
        .expect("bound");
    assert_eq!(
        (
            binding.integration_id.as_str(),
            binding.server_tool_name.as_str()
        ),
        (w.integration_id.as_str(), "echo")
    );

    let roles: Vec<_> = w.messages().await.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            runs::MessageRole::User,
            runs::MessageRole::Assistant,
            runs::MessageRole::Tool,
            runs::MessageRole::Assistant
        ]
    );
    // One conversation, one upstream session.
    assert_eq!(
        w.upstream.stats.snapshot().sessions,
        2,
        "one for discovery, one for the thread"
    );
}

#[tokio::test]
async fn an_oversized_result_and_a_server_error_reach_the_model_worded_by_runs_service() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![
                call("c1", "example__big", r#"{"bytes":5000000}"#),
                call("c2", "example__big", r#"{"bytes":99999999999}"#),
            ]),
            Turn::Text("Too much.".into()),
        ],
        ..Options::default()
    })
    .await;
    let events = w.say("fetch it all").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    // Worded from the facts mcp-service sends (the limit in bytes, the
    // server's JSON-RPC message), as mcp-service once worded them.
    assert_eq!(
        tool_messages_sent(&w.model, 1),
        [
            "MCP tool execution failed: the result is larger than 4 MiB",
            "MCP tool execution failed: bytes must be at most 67108864",
        ]
    );
    let statuses: Vec<_> = finished(&events).into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(
        statuses,
        [runs::ToolCallStatus::Failed, runs::ToolCallStatus::Failed]
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_come_back_in_call_order() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![
                call("c1", "example__sleep", r#"{"ms":300}"#),
                call("c2", "example__echo", r#"{"text":"fast"}"#),
            ]),
            Turn::FromToolResults("{tool_results}".into()),
        ],
        ..Options::default()
    })
    .await;
    let events = w.say("go").await;
    final_run(&events);
    let names: Vec<_> = finished(&events).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(names, ["example__sleep", "example__echo"]);
    assert_eq!(tool_messages_sent(&w.model, 1), ["slept 300ms", "fast"]);
}

#[tokio::test]
async fn tool_errors_timeouts_and_unknown_tools_reach_the_model_as_text() {
    tool_errors_reach_the_model(false).await;
}

#[tokio::test]
async fn tool_errors_timeouts_and_unknown_tools_reach_the_model_as_text_over_mutual_tls() {
    tool_errors_reach_the_model(true).await;
}

/// A failing, a timed-out and an unknown tool in one step; over mutual TLS
/// between the services when `mutual_tls`.
async fn tool_errors_reach_the_model(mutual_tls: bool) {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![
                call(
                    "c1",
                    "example__fail",
                    r#"{"message":"the warehouse is closed"}"#,
                ),
                call("c2", "example__sleep", r#"{"ms":10000}"#),
                call("c3", "example__teleport", r#"{}"#),
            ]),
            Turn::Text("I could not do it.".into()),
        ],
        call_timeout_secs: Some(1),
        mutual_tls,
        ..Options::default()
    })
    .await;
    let events = w.say("try").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let sent = tool_messages_sent(&w.model, 1);
    assert_eq!(
        sent[0],
        "MCP tool execution failed: the warehouse is closed"
    );
    assert_eq!(
        sent[1],
        "MCP tool execution failed: the tool `sleep` did not answer within 1s and was cancelled"
    );
    assert_eq!(
        sent[2],
        "A tool with the name example__teleport was not found. Only use tools that are available in your given list of tools."
    );
    let statuses: Vec<_> = finished(&events).into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(
        statuses,
        [
            runs::ToolCallStatus::Failed,
            runs::ToolCallStatus::TimedOut,
            runs::ToolCallStatus::NotFound
        ]
    );
}

#[tokio::test]
async fn one_unreachable_integration_is_reported_and_skipped() {
    let down_url = format!("http://127.0.0.1:{}/mcp", free_port().expect("port"));
    let token = admin();
    let mut w = world(Options {
        turns: vec![Turn::Text("Only the example server is available.".into())],
        ..Options::default()
    })
    .await;
    let down = create_integration(&mut w.mcp_client, &token, "down", &down_url, None).await;
    w.set_integrations(vec![w.integration_id.clone(), down.clone()])
        .await;
    let events = w.say("hi").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::IntegrationDiscoveryFailed(f)) => Some(f.integration_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(failed, std::slice::from_ref(&down));
    let system = w.model.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(system.contains(&down), "the model is told: {system}");
    assert!(tools_offered(&w.model, 0).contains(&"example__echo".to_owned()));
}

#[tokio::test]
async fn a_run_completes_while_mcp_service_is_down() {
    let mcp_down = format!("http://127.0.0.1:{}", free_port().expect("port"));
    let mut w = world(Options {
        turns: vec![Turn::Text("No tools today.".into())],
        mcp_url_override: Some(mcp_down),
        ..Options::default()
    })
    .await;
    let events = w.say("hi").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    assert!(
        events
            .iter()
            .any(|e| matches!(e.event, Some(Event::IntegrationDiscoveryFailed(_))))
    );
    assert_eq!(text_of(&events), "No tools today.");
}

#[tokio::test]
async fn another_organizations_integration_is_not_discovered() {
    let mut w = world(Options {
        turns: vec![Turn::Text("ok".into())],
        ..Options::default()
    })
    .await;
    let foreign = create_integration(
        &mut w.mcp_client,
        &switchboard_test_support::token("org-other", "u", &["admin"]),
        "theirs",
        &w.upstream.url(),
        None,
    )
    .await;
    w.set_integrations(vec![foreign.clone()]).await;
    let events = w.say("hi").await;
    let failure = events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::IntegrationDiscoveryFailed(f)) => Some(f.clone()),
            _ => None,
        })
        .expect("the foreign integration is refused");
    assert_eq!(failure.integration_id, foreign);
    assert!(failure.error.contains("not found"), "{}", failure.error);
}

#[tokio::test]
async fn the_step_limit_stops_a_run_with_max_steps() {
    let turns = (0..5)
        .map(|i| {
            Turn::ToolCalls(vec![call(
                &format!("c{i}"),
                "example__echo",
                r#"{"text":"again"}"#,
            )])
        })
        .collect();
    let mut w = world(Options {
        turns,
        agent: Box::new(|agent| agent.max_steps = 2),
        ..Options::default()
    })
    .await;
    let events = w.say("loop").await;
    let run = final_run(&events);
    assert_eq!(run.status(), runs::RunStatus::MaxSteps);
    assert_eq!(run.steps, 2);
    assert_eq!(w.model.requests().len(), 2);
}

#[tokio::test]
async fn client_tools_pause_the_run_and_their_results_resume_it() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![call("loc-1", "get_location", "{}")]),
            Turn::FromToolResults("You are in {last_tool_result}.".into()),
        ],
        agent: Box::new(|agent| {
            agent.client_tools.push(runs::ClientTool {
                name: "get_location".into(),
                description: "The user's city.".into(),
                parameters_schema: None,
            });
        }),
        ..Options::default()
    })
    .await;
    let events = w.say("Where am I?").await;
    let paused = final_run(&events);
    assert_eq!(paused.status(), runs::RunStatus::RequiresAction);
    let requested: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::ClientToolCallsRequired(r)) => Some(
                r.tool_calls
                    .iter()
                    .map(|c| c.id.clone())
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(requested, ["loc-1"]);

    // A new message while paused is refused.
    let busy = w
        .runs_client
        .execute_run(authed(
            runs::ExecuteRunRequest {
                thread_id: w.thread_id.clone(),
                input: Some(runs::execute_run_request::Input::UserMessage(
                    runs::UserMessageInput { text: "x".into() },
                )),
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect_err("the thread waits for tool results");
    assert_eq!(busy.code(), Code::FailedPrecondition);
    assert_eq!(
        busy.get_error_details()
            .error_info()
            .map(|info| info.reason.clone()),
        Some("ERROR_REASON_THREAD_BUSY".to_owned())
    );

    let resumed = w
        .execute(runs::ExecuteRunRequest {
            thread_id: w.thread_id.clone(),
            input: Some(runs::execute_run_request::Input::ClientToolResults(
                runs::ClientToolResultsInput {
                    run_id: paused.id.clone(),
                    results: vec![runs::ClientToolResult {
                        tool_call_id: "loc-1".into(),
                        content: "Paris".into(),
                        is_error: false,
                    }],
                    input_answers: Vec::new(),
                    approval_decisions: Vec::new(),
                },
            )),
            ..Default::default()
        })
        .await;
    let done = final_run(&resumed);
    assert_eq!(done.id, paused.id);
    assert_eq!(done.status(), runs::RunStatus::Completed);
    assert_eq!(text_of(&resumed), "You are in Paris.");
}

#[tokio::test]
async fn closing_the_stream_cancels_the_run_and_keeps_what_it_did() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![call("c1", "example__echo", r#"{"text":"one"}"#)]),
            Turn::Delay(
                Duration::from_secs(30),
                Box::new(Turn::Text("too late".into())),
            ),
        ],
        ..Options::default()
    })
    .await;
    let mut stream = w
        .runs_client
        .execute_run(authed(
            runs::ExecuteRunRequest {
                thread_id: w.thread_id.clone(),
                input: Some(runs::execute_run_request::Input::UserMessage(
                    runs::UserMessageInput { text: "hi".into() },
                )),
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect("started")
        .into_inner();
    let first = stream.next().await.expect("an event").expect("ok");
    let Some(Event::RunStarted(started)) = first.event else {
        panic!("RunStarted first")
    };
    let run_id = started.run.expect("a run").id;
    // The tool step is stored; the second model call hangs.
    let mut stored = 0;
    while stored < 3 {
        let event = stream.next().await.expect("an event").expect("ok");
        if matches!(event.event, Some(Event::MessageCreated(_))) {
            stored += 1;
        }
    }

    // A second run on the busy thread is refused.
    let busy = w
        .runs_client
        .execute_run(authed(
            runs::ExecuteRunRequest {
                thread_id: w.thread_id.clone(),
                input: Some(runs::execute_run_request::Input::UserMessage(
                    runs::UserMessageInput {
                        text: "again".into(),
                    },
                )),
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect_err("one run at a time");
    assert_eq!(busy.code(), Code::FailedPrecondition);
    assert_eq!(
        busy.get_error_details()
            .error_info()
            .map(|info| info.reason.clone()),
        Some("ERROR_REASON_THREAD_BUSY".to_owned())
    );

    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    let run = loop {
        let run = w
            .runs_client
            .get_run(authed(runs::GetRunRequest { id: run_id.clone() }, &w.token))
            .await
            .expect("run")
            .into_inner()
            .run
            .expect("a run");
        if run.status() == runs::RunStatus::Cancelled {
            break run;
        }
        assert!(
            Instant::now() < deadline,
            "the run was not cancelled: {:?}",
            run.status()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(run.steps, 1, "the finished step is counted");
    assert!(
        run.tool_bindings
            .iter()
            .any(|b| b.tool_name == "example__echo"),
        "the tools it offered are kept"
    );
    let roles: Vec<_> = w.messages().await.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            runs::MessageRole::User,
            runs::MessageRole::Assistant,
            runs::MessageRole::Tool
        ]
    );
}

#[tokio::test]
async fn the_anthropic_adapter_drives_a_run_too() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![call("toolu_1", "example__add", r#"{"a":2,"b":3}"#)]),
            Turn::FromToolResults("The sum is {last_tool_result}.".into()),
        ],
        provider_kind: "anthropic",
        ..Options::default()
    })
    .await;
    let events = w.say("add").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    assert_eq!(text_of(&events), "The sum is 5.");
}

#[tokio::test]
async fn runs_left_running_by_a_stopped_process_are_interrupted_at_start() {
    use switchboard_runs_service::{
        domain::{
            entities::{Run, RunStatus, Thread, Usage},
            ids::{AgentId, RunId, ThreadId},
            ports::RunsRepository,
        },
        outbound::sql::{MIGRATIONS, Replica, SqlRunsRepository},
    };
    let db = TestDb::sqlite().expect("db");
    let database = switchboard_db::DatabaseArgs::for_url(&db.url)
        .open("runs", MIGRATIONS)
        .await
        .expect("db");
    // The stopped process's lease ran out long ago.
    let repo = SqlRunsRepository::new(database.pool.clone())
        .with_replica(Replica::new(None, Duration::from_millis(1)));
    let thread = Thread {
        id: ThreadId::new(),
        org_id: "o".into(),
        user_id: "u".into(),
        agent_id: AgentId::new(),
        title: String::new(),
        created_at: 1,
        updated_at: 1,
    };
    repo.insert_thread(&thread).await.expect("thread");
    let run = Run {
        id: RunId::new(),
        thread_id: thread.id,
        agent_id: thread.agent_id,
        status: RunStatus::Running,
        steps: 1,
        usage: Usage::default(),
        error: None,
        bindings: vec![],
        pending: vec![],
        created_at: 1,
        updated_at: 1,
    };
    repo.start_run(&run).await.expect("a run left running");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let server = switchboard_runs_service::spawn(switchboard_runs_service::Config::for_tests(
        &db.url,
        TEST_JWT_SECRET,
        "http://127.0.0.1:1",
    ))
    .await
    .expect("starts");
    let stored = repo.find_run(run.id).await.expect("read").expect("found");
    assert_eq!(stored.status, RunStatus::Interrupted);
    assert!(stored.error.expect("a reason").contains("lease expired"));
    server.stop().await.expect("stops");
}
