//! An MCP server that asks before it completes a tool call (multi-round-trip
//! requests): the run pauses with `requires_action` and tells its caller
//! the server's questions; the caller's answers resume it, runs-service
//! makes the call again with them, and the model reads the result.

use switchboard_example_mcp_server::CONFIRM_KEY;
use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use tonic::Code;

use crate::world::{Options, World, final_run, tool_messages_sent, world};

async fn confirming_world() -> World {
    asking_world("example__confirm", false).await
}

/// The model calls `tool` of the example server once, then says what it
/// returned; the services talk over mutual TLS when `mutual_tls`.
async fn asking_world(tool: &str, mutual_tls: bool) -> World {
    world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                tool,
                r#"{"action":"deploy"}"#,
            )]),
            Turn::FromToolResults("The tool said: {last_tool_result}".into()),
        ],
        questions_to_caller: true,
        mutual_tls,
        ..Options::default()
    })
    .await
}

fn resume(
    thread_id: &str,
    run_id: &str,
    answers: Vec<runs::ToolInputAnswers>,
) -> runs::ExecuteRunRequest {
    runs::ExecuteRunRequest {
        thread_id: thread_id.to_owned(),
        input: Some(runs::execute_run_request::Input::ClientToolResults(
            runs::ClientToolResultsInput {
                run_id: run_id.to_owned(),
                results: Vec::new(),
                input_answers: answers,
                approval_decisions: Vec::new(),
            },
        )),
        ..Default::default()
    }
}

fn answer(json: &str) -> runs::ToolInputAnswers {
    runs::ToolInputAnswers {
        tool_call_id: "c1".into(),
        responses: [(CONFIRM_KEY.to_owned(), json.to_owned())].into(),
    }
}

fn statuses(events: &[runs::ExecuteRunResponse]) -> Vec<runs::ToolCallStatus> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::ToolCallFinished(f)) => Some(f.status()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_servers_question_pauses_the_run_and_the_callers_answer_completes_the_call() {
    the_callers_answer_completes_the_call(false).await;
}

#[tokio::test]
async fn a_servers_question_pauses_the_run_and_the_callers_answer_completes_the_call_over_mutual_tls()
 {
    the_callers_answer_completes_the_call(true).await;
}

/// A question, the caller's answer, the call made again with it; over
/// mutual TLS between the services when `mutual_tls`.
async fn the_callers_answer_completes_the_call(mutual_tls: bool) {
    let mut w = asking_world("example__confirm", mutual_tls).await;
    let events = w.say("Deploy it.").await;
    let paused = final_run(&events);
    assert_eq!(
        paused.status(),
        runs::RunStatus::RequiresAction,
        "{events:#?}"
    );
    assert_eq!(statuses(&events), [runs::ToolCallStatus::InputRequired]);
    let asked = events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::ToolInputRequired(asked)) => Some(asked.clone()),
            _ => None,
        })
        .expect("the server's question reaches the caller");
    assert_eq!(
        (asked.tool_call_id.as_str(), asked.tool_name.as_str()),
        ("c1", "example__confirm")
    );
    assert_eq!(asked.requests.len(), 1);
    assert_eq!(asked.requests[0].key, CONFIRM_KEY);
    assert_eq!(asked.requests[0].method, "elicitation/create");
    assert!(
        asked.requests[0].params_json.contains("deploy"),
        "{:?}",
        asked.requests[0]
    );
    // The model has read nothing of the call yet.
    assert_eq!(w.model.requests().len(), 1);

    // Answers that are missing, or not results, are refused and the run
    // still waits.
    let mut client = w.runs_client.clone();
    for request in [
        resume(&w.thread_id, &paused.id, Vec::new()),
        resume(&w.thread_id, &paused.id, vec![answer("yes")]),
    ] {
        let error = client
            .execute_run(switchboard_test_support::authed(request, &w.token))
            .await
            .expect_err("refused");
        assert_eq!(error.code(), Code::InvalidArgument, "{error:?}");
    }

    let request = resume(
        &w.thread_id,
        &paused.id,
        vec![answer(
            r#"{"action":"accept","content":{"confirmed":true}}"#,
        )],
    );
    let resumed = w.execute(request).await;
    let done = final_run(&resumed);
    assert_eq!(done.id, paused.id);
    assert_eq!(done.status(), runs::RunStatus::Completed);
    assert_eq!(statuses(&resumed), [runs::ToolCallStatus::Succeeded]);
    assert_eq!(tool_messages_sent(&w.model, 1), ["confirmed deploy"]);
    let tool_results: Vec<_> = w
        .messages()
        .await
        .into_iter()
        .filter(|m| m.role() == runs::MessageRole::Tool)
        .collect();
    assert_eq!(tool_results.len(), 1, "one result for the one call");
}

#[tokio::test]
async fn a_declined_question_is_the_tools_answer_to_the_model() {
    let mut w = confirming_world().await;
    let paused = final_run(&w.say("Deploy it.").await);
    let request = resume(
        &w.thread_id,
        &paused.id,
        vec![answer(r#"{"action":"decline"}"#)],
    );
    let resumed = w.execute(request).await;
    assert_eq!(final_run(&resumed).status(), runs::RunStatus::Completed);
    assert_eq!(tool_messages_sent(&w.model, 1), ["declined deploy"]);
}

#[tokio::test]
async fn a_question_from_a_task_is_answered_to_that_task_and_the_tool_runs_once() {
    let mut w = asking_world("example__task_confirm", false).await;
    let events = w.say("Deploy it.").await;
    let paused = final_run(&events);
    assert_eq!(
        paused.status(),
        runs::RunStatus::RequiresAction,
        "{events:#?}"
    );
    assert_eq!(statuses(&events), [runs::ToolCallStatus::InputRequired]);
    let request = resume(
        &w.thread_id,
        &paused.id,
        vec![answer(
            r#"{"action":"accept","content":{"confirmed":true}}"#,
        )],
    );
    let resumed = w.execute(request).await;
    assert_eq!(
        final_run(&resumed).status(),
        runs::RunStatus::Completed,
        "{resumed:#?}"
    );
    assert_eq!(tool_messages_sent(&w.model, 1), ["confirmed deploy"]);
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        1,
        "the answers went to the task; the tool was not called again"
    );
}
