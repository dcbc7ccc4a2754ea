//! Provider failover: an agent names fallback models; a model that fails
//! before any output (here, a provider answering 503 past its retries)
//! hands the step to the next, and the run completes on it.

use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{Options, final_run, world};

fn unavailable() -> Turn {
    Turn::Error {
        status: 503,
        body: r#"{"error":{"message":"overloaded"}}"#.into(),
        retry_after: None,
    }
}

fn backup() -> runs::ModelRef {
    runs::ModelRef {
        provider: "backup".into(),
        model: "backup-model".into(),
    }
}

#[tokio::test]
async fn a_provider_answering_503_hands_the_step_to_the_next_model_and_the_run_completes() {
    let mut w = world(Options {
        // More failures than the provider's retries: every attempt fails.
        turns: (0..10).map(|_| unavailable()).collect(),
        backup_turns: Some(vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__echo",
                r#"{"text":"from the backup"}"#,
            )]),
            Turn::FromToolResults("The tool said: {last_tool_result}".into()),
        ]),
        agent: Box::new(|agent| agent.fallback_models = vec![backup()]),
        ..Options::default()
    })
    .await;
    let events = w.say("echo something").await;

    let run = final_run(&events);
    assert_eq!(run.status(), runs::RunStatus::Completed, "{events:?}");
    let fallbacks: Vec<&runs::ModelFallback> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::ModelFallback(f)) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(
        fallbacks.len(),
        1,
        "the first step moved on once; the run stayed with the model that answered: {fallbacks:?}"
    );
    let moved = fallbacks[0];
    assert_eq!(
        moved
            .failed
            .as_ref()
            .map(|m| (m.provider.as_str(), m.model.as_str())),
        Some(("scripted", "test-model"))
    );
    assert!(moved.error.contains("503"), "{}", moved.error);
    assert_eq!(moved.next.as_ref(), Some(&backup()));
    let answered_by: Vec<Option<runs::ModelRef>> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::TokenUsage(usage)) => Some(usage.model.clone()),
            _ => None,
        })
        .collect();
    assert!(!answered_by.is_empty());
    assert!(
        answered_by.iter().all(|m| m.as_ref() == Some(&backup())),
        "usage names the model that answered: {answered_by:?}"
    );
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        1,
        "the backup's tool call reached the server"
    );
    let answer = w.messages().await;
    let Some(runs::content_part::Part::Text(text)) =
        &answer.last().expect("an answer").content[0].part
    else {
        panic!("a text answer");
    };
    assert!(text.text.contains("from the backup"), "{}", text.text);
}

#[tokio::test]
async fn a_model_that_refuses_the_request_itself_fails_the_run_without_moving_on() {
    let mut w = world(Options {
        turns: vec![Turn::Error {
            status: 400,
            body: r#"{"error":{"message":"context too long"}}"#.into(),
            retry_after: None,
        }],
        backup_turns: Some(vec![Turn::Text("never asked".into())]),
        agent: Box::new(|agent| agent.fallback_models = vec![backup()]),
        ..Options::default()
    })
    .await;
    let events = w.say("hello").await;

    let last = events.last().and_then(|e| e.event.clone());
    let Some(Event::RunFailed(failed)) = last else {
        panic!("the run fails: {last:?}");
    };
    assert!(failed.error.contains("400"), "{}", failed.error);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Some(Event::ModelFallback(_)))),
        "no move to the next model"
    );
    let backup = w.backup_model.as_ref().expect("a backup");
    assert!(backup.requests().is_empty(), "the backup was never asked");
}
