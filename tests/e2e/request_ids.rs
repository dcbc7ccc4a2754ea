//! Idempotency keys (`request_id`): a repeated create or run returns the
//! first result instead of doing the work twice; a key reused for other
//! content is refused with its own reason.

use switchboard_proto::runs::v1::{self as runs, execute_run_request::Input};
use switchboard_scripted_model::Turn;
use switchboard_test_support::{authed, token};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::world::{Options, World, world};

fn reason(status: &tonic::Status) -> String {
    status
        .get_error_details()
        .error_info()
        .map(|info| info.reason.clone())
        .unwrap_or_default()
}

fn agent_request(integration_id: &str, name: &str, request_id: &str) -> runs::CreateAgentRequest {
    runs::CreateAgentRequest {
        agent: Some(runs::Agent {
            name: name.into(),
            model: Some(runs::ModelRef {
                provider: "scripted".into(),
                model: "test-model".into(),
            }),
            mcp_integration_ids: vec![integration_id.to_owned()],
            ..Default::default()
        }),
        request_id: request_id.into(),
    }
}

async fn create_agent(
    w: &mut World,
    request: runs::CreateAgentRequest,
    token: &str,
) -> Result<String, tonic::Status> {
    w.runs_client
        .create_agent(authed(request, token))
        .await
        .map(|reply| reply.into_inner().agent.expect("an agent").id)
}

#[tokio::test]
async fn a_repeated_create_returns_the_first_object_and_a_reused_key_is_refused() {
    let mut w = world(Options::default()).await;
    let admin = w.token.clone();
    let integration = w.integration_id.clone();
    let first = create_agent(&mut w, agent_request(&integration, "a", "key-1"), &admin)
        .await
        .expect("created");
    let again = create_agent(&mut w, agent_request(&integration, "a", "key-1"), &admin)
        .await
        .expect("repeated");
    assert_eq!(first, again, "the repeat returns the first agent");

    let reused = create_agent(&mut w, agent_request(&integration, "b", "key-1"), &admin)
        .await
        .expect_err("other content under the same key");
    assert_eq!(reused.code(), Code::InvalidArgument);
    assert_eq!(reason(&reused), "ERROR_REASON_REQUEST_ID_REUSED");

    let other_org = token("org-other", "user-other", &["admin"]);
    let elsewhere = create_agent(
        &mut w,
        agent_request(&integration, "a", "key-1"),
        &other_org,
    )
    .await
    .expect("another organization's key is its own");
    assert_ne!(elsewhere, first);

    let listed = w
        .runs_client
        .list_agents(authed(
            runs::ListAgentsRequest {
                page_size: 50,
                page_token: String::new(),
            },
            &admin,
        ))
        .await
        .expect("listed")
        .into_inner()
        .agents;
    assert_eq!(
        listed.len(),
        2,
        "the world's agent and one more, not two more"
    );

    let too_long = create_agent(
        &mut w,
        agent_request(&integration, "c", &"k".repeat(129)),
        &admin,
    )
    .await
    .expect_err("a key past 128 characters");
    assert_eq!(too_long.code(), Code::InvalidArgument);
    assert_eq!(reason(&too_long), "ERROR_REASON_INVALID_ARGUMENT");
}

#[tokio::test]
async fn a_repeated_run_replays_its_outcome_without_running_again() {
    let mut w = world(Options {
        turns: vec![Turn::Text("the only answer".into())],
        ..Default::default()
    })
    .await;
    let request = runs::ExecuteRunRequest {
        thread_id: w.thread_id.clone(),
        input: Some(Input::UserMessage(runs::UserMessageInput {
            text: "hello".into(),
        })),
        request_id: "run-key-1".into(),
        ..Default::default()
    };
    let first = w.execute(request.clone()).await;
    let first_run = first.first().expect("events").run_id.clone();
    let messages = w.messages().await.len();
    let calls = w.model.requests().len();

    let replay = w.execute(request.clone()).await;
    let kinds: Vec<_> = replay
        .iter()
        .map(|e| match &e.event {
            Some(runs::execute_run_response::Event::RunStarted(_)) => "run_started",
            Some(runs::execute_run_response::Event::RunCompleted(c)) => {
                assert_eq!(
                    c.run.as_ref().map(|r| r.status()),
                    Some(runs::RunStatus::Completed)
                );
                "run_completed"
            }
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["run_started", "run_completed"]);
    assert!(
        replay.iter().all(|e| e.run_id == first_run),
        "the first run"
    );
    assert_eq!(w.messages().await.len(), messages, "nothing stored twice");
    assert_eq!(
        w.model.requests().len(),
        calls,
        "the model was not called again"
    );

    let other_text = runs::ExecuteRunRequest {
        input: Some(Input::UserMessage(runs::UserMessageInput {
            text: "something else".into(),
        })),
        ..request
    };
    let refused = w
        .runs_client
        .execute_run(authed(other_text, &w.token))
        .await
        .expect_err("the key belongs to another request");
    assert_eq!(reason(&refused), "ERROR_REASON_REQUEST_ID_REUSED");
}

#[tokio::test]
async fn a_repeat_of_a_run_still_going_is_told_to_retry_later() {
    let mut w = world(Options {
        // Long enough that the run is still going when the repeat arrives;
        // the test ends by closing the stream, which cancels the run.
        turns: vec![Turn::Delay(
            std::time::Duration::from_secs(60),
            Box::new(Turn::Text("late".into())),
        )],
        ..Default::default()
    })
    .await;
    let request = runs::ExecuteRunRequest {
        thread_id: w.thread_id.clone(),
        input: Some(Input::UserMessage(runs::UserMessageInput {
            text: "hello".into(),
        })),
        request_id: "run-key-2".into(),
        ..Default::default()
    };
    let mut first = w
        .runs_client
        .execute_run(authed(request.clone(), &w.token))
        .await
        .expect("the run starts")
        .into_inner();
    let started = first
        .message()
        .await
        .expect("an event")
        .expect("run_started");
    assert!(matches!(
        started.event,
        Some(runs::execute_run_response::Event::RunStarted(_))
    ));

    let repeat = w
        .runs_client
        .execute_run(authed(request, &w.token))
        .await
        .expect_err("the first run is still going");
    assert_eq!(repeat.code(), Code::Aborted, "{repeat:?}");
    assert_eq!(reason(&repeat), "ERROR_REASON_REQUEST_IN_PROGRESS");
    assert!(
        repeat.get_error_details().retry_info().is_some(),
        "a retry helps, so the status says when"
    );
    drop(first);
}

#[tokio::test]
async fn a_repeated_thread_or_import_is_made_once() {
    let mut w = world(Options::default()).await;
    let token = w.token.clone();
    let thread = |request_id: &str| runs::CreateThreadRequest {
        agent_id: w.agent_id.clone(),
        title: "keyed".into(),
        request_id: request_id.into(),
    };
    let (first, again) = (thread("thread-key"), thread("thread-key"));
    let mut ids = Vec::new();
    for request in [first, again] {
        ids.push(
            w.runs_client
                .create_thread(authed(request, &token))
                .await
                .expect("thread created")
                .into_inner()
                .thread
                .expect("a thread")
                .id,
        );
    }
    assert_eq!(ids[0], ids[1], "one thread for one key");

    let import = runs::ImportDataSourceRequest {
        thread_id: ids[0].clone(),
        name: "sales".into(),
        csv: b"quarter,revenue\nQ1,10\n".to_vec(),
        request_id: "import-key".into(),
    };
    let mut sources = Vec::new();
    for _ in 0..2 {
        sources.push(
            w.runs_client
                .import_data_source(authed(import.clone(), &token))
                .await
                .expect("imported")
                .into_inner()
                .data_source
                .expect("a data source")
                .id,
        );
    }
    assert_eq!(sources[0], sources[1], "one import for one key");
    let listed = w
        .runs_client
        .list_data_sources(authed(
            runs::ListDataSourcesRequest {
                thread_id: ids[0].clone(),
                page_size: 10,
                page_token: String::new(),
            },
            &token,
        ))
        .await
        .expect("listed")
        .into_inner()
        .data_sources;
    assert_eq!(listed.len(), 1);

    let another_user = token_of_another_user();
    let refused = w
        .runs_client
        .import_data_source(authed(import, &another_user))
        .await
        .expect_err("another user's repeat");
    assert_eq!(reason(&refused), "ERROR_REASON_REQUEST_ID_REUSED");
}

/// A member of the same organization who is not the threads' owner.
fn token_of_another_user() -> String {
    token(crate::world::ORG, "someone-else", &["member"])
}
