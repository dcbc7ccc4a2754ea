//! A run's input past its limits is refused with INVALID_ARGUMENT naming
//! the field, before anything is stored or sent to the model.

use switchboard_proto::runs::v1::{self as runs, execute_run_request::Input};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{DbKind, db_tests};

use super::{bench, bench_with_agent, completed, user_message};

async fn an_oversized_user_message_is_refused_and_nothing_is_stored(kind: DbKind) {
    let mut bench = bench(kind, "openai", vec![Turn::Text("fine".into())], |config| {
        config.model_limits.max_user_message_bytes = 1024;
    })
    .await;
    let refused = bench
        .start(user_message(&"x".repeat(1025)))
        .await
        .expect_err("refused");
    assert_eq!(super::bad_fields(&refused), ["user_message.text"]);
    assert!(bench.messages().await.is_empty(), "nothing was stored");
    assert!(bench.model.requests().is_empty(), "the model saw nothing");

    // The thread is free for a message within the limit.
    completed(&bench.say(&"x".repeat(1024)).await);
    bench.stop().await;
}

fn results(count: usize, content: &str, id: &str) -> Vec<runs::ClientToolResult> {
    (0..count)
        .map(|_| runs::ClientToolResult {
            tool_call_id: id.into(),
            content: content.into(),
            is_error: false,
        })
        .collect()
}

async fn too_many_or_oversized_client_tool_results_are_refused(kind: DbKind) {
    let turns = vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new("call_ask", "ask_user", "{}")]),
        Turn::FromToolResults("got {last_tool_result}".into()),
    ];
    let mut bench = bench_with_agent(
        kind,
        "openai",
        turns,
        |config| {
            config.model_limits.max_client_tool_results = 2;
            config.model_limits.max_client_tool_result_bytes = 100;
        },
        |agent| {
            agent.client_tools = vec![runs::ClientTool {
                name: "ask_user".into(),
                description: "Asks the user".into(),
                ..Default::default()
            }];
        },
    )
    .await;
    let events = bench.say("ask me").await;
    let paused = completed(&events);
    assert_eq!(paused.status, runs::RunStatus::RequiresAction as i32);
    let stored = bench.messages().await.len();

    let resume = |results| {
        Input::ClientToolResults(runs::ClientToolResultsInput {
            run_id: paused.id.clone(),
            results,
            input_answers: Vec::new(),
            approval_decisions: Vec::new(),
        })
    };
    let too_many = bench
        .start(resume(results(3, "yes", "call_ask")))
        .await
        .expect_err("refused");
    assert_eq!(
        super::bad_fields(&too_many),
        ["client_tool_results.results"]
    );
    let too_large = bench
        .start(resume(results(1, &"y".repeat(101), "call_ask")))
        .await
        .expect_err("refused");
    assert_eq!(
        super::bad_fields(&too_large),
        ["client_tool_results.results[0].content"]
    );
    // Answers count with results: three answers are past a limit of two.
    let too_many_answers = bench
        .start(Input::ClientToolResults(runs::ClientToolResultsInput {
            run_id: paused.id.clone(),
            results: Vec::new(),
            input_answers: vec![runs::ToolInputAnswers {
                tool_call_id: "call_ask".into(),
                responses: ["a", "b", "c"]
                    .map(|k| (k.to_owned(), "{}".to_owned()))
                    .into(),
            }],
            approval_decisions: Vec::new(),
        }))
        .await
        .expect_err("refused");
    assert_eq!(
        super::bad_fields(&too_many_answers),
        ["client_tool_results"]
    );
    let answer = runs::ToolInputAnswers {
        tool_call_id: "call_ask".into(),
        responses: [("k".to_owned(), format!("{{\"a\":\"{}\"}}", "y".repeat(101)))].into(),
    };
    let oversized_answer = bench
        .start(Input::ClientToolResults(runs::ClientToolResultsInput {
            run_id: paused.id.clone(),
            results: Vec::new(),
            input_answers: vec![answer],
            approval_decisions: Vec::new(),
        }))
        .await
        .expect_err("refused");
    assert_eq!(
        super::bad_fields(&oversized_answer),
        ["client_tool_results.input_answers[0].responses[\"k\"]"]
    );
    assert_eq!(bench.messages().await.len(), stored, "nothing was stored");
    let run = bench.get_run(&paused.id).await;
    assert_eq!(run.status, runs::RunStatus::RequiresAction as i32);

    // The paused run still takes results within the limits.
    let done = bench
        .start(resume(results(1, "yes", "call_ask")))
        .await
        .expect("accepted");
    let run = completed(&done);
    assert_eq!(run.status, runs::RunStatus::Completed as i32);
    bench.stop().await;
}

db_tests!(
    an_oversized_user_message_is_refused_and_nothing_is_stored,
    too_many_or_oversized_client_tool_results_are_refused,
);
