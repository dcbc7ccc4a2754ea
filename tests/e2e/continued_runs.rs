//! A run taken over from a stopped replica goes on from its record, end to
//! end: the stopped replica's state is written as it leaves it (a model
//! turn of three tool calls stored, one call's result among its stored
//! events, the caller's token sealed), and runs-service, with the same
//! caller keys, takes the run over and finishes it. The call with a
//! recorded result is not made again, the idempotent one is, and the third
//! is told to the model as one that may have run.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use secrecy::SecretString;
use switchboard_auth::{Authenticator, BearerToken, Principal, VerifierConfig};
use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_runs_service::{
    domain::{
        entities::{Message, Part, Role, Run, RunStatus, Usage},
        events::{Envelope, RunEvent, ToolCallStatus, ToolKind},
        ids::{MessageId, RunId},
        model::ToolCall,
        ports::{Caller, CallerKeeper as _, RunTakeovers as _, RunsRepository as _},
    },
    outbound::{
        callers::SealedCallers,
        sql::{MIGRATIONS, Replica, SqlRunsRepository},
    },
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_sealing::KeyRing;
use switchboard_test_support::{TEST_JWT_SECRET, authed};

use crate::world::{Options, World, world};

/// The model's three calls of the turn in flight when its replica stopped.
fn calls() -> Vec<ToolCall> {
    let call = |id: &str, name: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    vec![
        call("recorded", "example__echo", r#"{"text":"once"}"#),
        call("idempotent", "example__add", r#"{"a":2,"b":3}"#),
        call("unresolved", "example__echo", r#"{"text":"twice?"}"#),
    ]
}

/// The call the stopped replica recorded a result of.
fn recorded() -> Vec<(&'static str, &'static str, ToolCallStatus, &'static str)> {
    vec![(
        "recorded",
        "example__echo",
        ToolCallStatus::Succeeded,
        "once (as recorded)",
    )]
}

/// Writes what a replica that stopped mid-turn leaves: the run with its
/// lease run out, the user's message and the model's turn of `calls`, the
/// events it stored (`finished`: the calls that ended, as id, tool, status
/// and result), and its caller sealed with `keys`.
async fn leave_a_stopped_run(
    w: &World,
    keys: &str,
    calls: Vec<ToolCall>,
    finished: Vec<(&str, &str, ToolCallStatus, &str)>,
) -> RunId {
    let database = switchboard_db::DatabaseArgs::for_url(&w._runs_db.url)
        .open("runs", MIGRATIONS)
        .await
        .expect("the runs database");
    let stopped = SqlRunsRepository::new(database.pool)
        .with_replica(Replica::new(None, Duration::from_millis(1)));
    let now = switchboard_db::now_millis();
    let run = Run {
        id: RunId::new(),
        thread_id: w.thread_id.parse().expect("a thread id"),
        agent_id: w.agent_id.parse().expect("an agent id"),
        status: RunStatus::Running,
        steps: 1,
        usage: Usage::default(),
        error: None,
        bindings: Vec::new(),
        pending: Vec::new(),
        created_at: now,
        updated_at: now,
    };
    let message = |role, parts| Message {
        id: MessageId::new(),
        thread_id: run.thread_id,
        run_id: Some(run.id),
        seq: 0,
        role,
        parts,
        created_at: now,
    };
    let asked = message(Role::User, vec![Part::Text { text: "go".into() }]);
    stopped
        .start_run_with(&run, &[asked])
        .await
        .expect("started");
    let turn = calls
        .iter()
        .cloned()
        .map(|c| Part::ToolCall {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
        })
        .collect();
    stopped
        .update_run_with(&run, &[message(Role::Assistant, turn)])
        .await
        .expect("the turn stored");
    let mut events = vec![RunEvent::Started(run.clone())];
    events.extend(calls.into_iter().map(|call| RunEvent::ToolCallStarted {
        call,
        kind: ToolKind::Mcp,
    }));
    events.extend(finished.into_iter().map(|(id, name, status, result)| {
        RunEvent::ToolCallFinished {
            id: id.into(),
            name: name.into(),
            status,
            result: result.into(),
        }
    }));
    let events: Vec<Envelope> = events
        .into_iter()
        .zip(1..)
        .map(|(event, sequence)| Envelope {
            run_id: run.id,
            sequence,
            event,
        })
        .collect();
    stopped.append_run_events(&events).await.expect("events");
    let callers = SealedCallers::new(
        KeyRing::parse(keys).expect("keys"),
        Arc::new(Authenticator::new(&VerifierConfig::hs256(TEST_JWT_SECRET)).expect("verifier")),
    );
    let caller = Caller {
        principal: Principal::new("unused", "unused", Vec::new()),
        token: Some(BearerToken(Arc::new(SecretString::from(w.token.clone())))),
    };
    let sealed = callers.seal(run.id, &caller).expect("sealed");
    stopped.keep_caller(run.id, &sealed).await.expect("kept");
    run.id
}

#[tokio::test]
async fn a_run_taken_over_repeats_only_the_idempotent_call_and_tells_the_model_the_rest() {
    let keys = KeyRing::random_spec("e2e");
    let mut w = world(Options {
        turns: vec![Turn::FromToolResults("read: {tool_results}".into())],
        agent: Box::new(|agent| {
            agent.recovery = runs::RunRecovery::Continue.into();
            agent.idempotent_tools = vec!["example__add".into()];
        }),
        caller_keys: Some(keys.clone()),
        ..Options::default()
    })
    .await;
    let run_id = leave_a_stopped_run(&w, &keys, calls(), recorded()).await;
    let events = watch_to_its_end(&mut w, run_id).await;

    let continued = events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::RunContinued(c)) => Some((e.sequence, c.clone())),
            _ => None,
        })
        .expect("a run_continued event");
    assert_eq!(
        continued.0,
        (1 << 32) + 1,
        "numbered from the takeover's epoch"
    );
    assert_eq!(continued.1.after_sequence, 5);
    assert_eq!(continued.1.takeovers, 1);
    assert_eq!(continued.1.recovered_tool_call_ids, ["recorded"]);
    assert_eq!(continued.1.repeated_tool_call_ids, ["idempotent"]);
    assert_eq!(continued.1.unresolved_tool_call_ids, ["unresolved"]);
    let finished: Vec<(String, runs::ToolCallStatus)> = events
        .iter()
        .filter(|e| e.sequence > 1 << 32)
        .filter_map(|e| match &e.event {
            Some(Event::ToolCallFinished(f)) => Some((f.tool_call_id.clone(), f.status())),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        [
            ("unresolved".to_owned(), runs::ToolCallStatus::MayHaveRun),
            ("idempotent".to_owned(), runs::ToolCallStatus::Succeeded),
        ]
    );
    // Only the idempotent call reached the server.
    assert_eq!(w.upstream.stats.snapshot().tool_calls, 1);
    let last = events.last().and_then(|e| e.event.clone());
    let Some(Event::RunCompleted(done)) = last else {
        panic!("the run completes: {last:?}");
    };
    assert_eq!(
        done.run.expect("a run").status(),
        runs::RunStatus::Completed
    );
    // The model read the three results in the order it called.
    let messages = w.messages().await;
    let answer = messages.last().expect("an answer");
    let Some(runs::content_part::Part::Text(text)) = &answer.content[0].part else {
        panic!("a text answer: {answer:?}");
    };
    let read = &text.text;
    let (recorded, repeated, unresolved) = (
        read.find("once (as recorded)")
            .expect("the recorded result"),
        read.find('5').expect("the repeated result"),
        read.find("may have taken effect")
            .expect("the may-have-run result"),
    );
    assert!(recorded < repeated && repeated < unresolved, "{read}");
}

/// Every event of run `run_id` but heartbeats, watched from its start to
/// its end (or its pause).
async fn watch_to_its_end(w: &mut World, run_id: RunId) -> Vec<runs::ExecuteRunResponse> {
    let request = runs::WatchRunRequest {
        id: run_id.to_string(),
        from_sequence: 1,
    };
    let mut stream = w
        .runs_client
        .watch_run(authed(request, &w.token))
        .await
        .expect("watched")
        .into_inner();
    let mut events = Vec::new();
    let watched = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = stream.next().await {
            let event = item.expect("an event").event.expect("an event");
            if !matches!(event.event, Some(Event::Heartbeat(_))) {
                events.push(event);
            }
        }
    });
    watched.await.expect("the run ends within 30 s");
    events
}

/// A call whose server had asked the caller something when its replica
/// stopped (its `INPUT_REQUIRED` recorded, the run not yet paused): the
/// server may have acted before it asked (a task asks mid-way), so the call
/// is made again only when its tool is idempotent — the server asks again and the run pauses
/// with the question for its caller — and is otherwise told to the model as
/// one that may have run.
#[tokio::test]
async fn a_call_whose_server_asked_when_its_replica_stopped_is_asked_again_only_if_idempotent() {
    let keys = KeyRing::random_spec("e2e");
    let mut w = world(Options {
        turns: vec![Turn::FromToolResults("read: {tool_results}".into())],
        agent: Box::new(|agent| {
            agent.recovery = runs::RunRecovery::Continue.into();
            agent.idempotent_tools = vec!["example__confirm".into()];
        }),
        questions_to_caller: true,
        caller_keys: Some(keys.clone()),
        ..Options::default()
    })
    .await;
    let call = |id: &str, name: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: r#"{"action":"deploy"}"#.into(),
    };
    let asked = ToolCallStatus::InputRequired;
    let run_id = leave_a_stopped_run(
        &w,
        &keys,
        vec![
            call("asked-again", "example__confirm"),
            call("not-again", "example__task_confirm"),
        ],
        vec![
            ("asked-again", "example__confirm", asked, ""),
            ("not-again", "example__task_confirm", asked, ""),
        ],
    )
    .await;
    let events = watch_to_its_end(&mut w, run_id).await;

    let continued = events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::RunContinued(c)) => Some(c.clone()),
            _ => None,
        })
        .expect("a run_continued event");
    assert_eq!(continued.repeated_tool_call_ids, ["asked-again"]);
    assert_eq!(continued.unresolved_tool_call_ids, ["not-again"]);
    let question = events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::ToolInputRequired(asked)) => Some(asked.clone()),
            _ => None,
        })
        .expect("the server's question, asked again, is shown to the caller");
    assert_eq!(question.tool_call_id, "asked-again");
    let last = events.last().and_then(|e| e.event.clone());
    let Some(Event::RunCompleted(paused)) = last else {
        panic!("the run pauses: {last:?}");
    };
    assert_eq!(
        paused.run.expect("a run").status(),
        runs::RunStatus::RequiresAction
    );
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        1,
        "only the idempotent call reached the server again"
    );
}

#[tokio::test]
async fn a_replica_that_lost_its_run_to_another_stores_no_end_of_it() {
    let keys = KeyRing::random_spec("e2e");
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "slow",
                "example__sleep",
                r#"{"ms":3000}"#,
            )]),
            Turn::Text("done".into()),
        ],
        agent: Box::new(|agent| agent.recovery = runs::RunRecovery::Continue.into()),
        caller_keys: Some(keys),
        ..Options::default()
    })
    .await;
    let request = runs::ExecuteRunRequest {
        thread_id: w.thread_id.clone(),
        input: Some(runs::execute_run_request::Input::UserMessage(
            runs::UserMessageInput { text: "go".into() },
        )),
        ..Default::default()
    };
    let mut stream = w
        .runs_client
        .execute_run(authed(request, &w.token))
        .await
        .expect("the run starts")
        .into_inner();
    let mut run_id = String::new();
    while let Some(event) = stream.next().await {
        let event = event.expect("an event");
        run_id.clone_from(&event.run_id);
        if matches!(event.event, Some(Event::ToolCallStarted(_))) {
            break;
        }
    }
    // Another replica takes the run over while this one lives on (cut off
    // from the database for a lease, say), as its claim would.
    let pool = sqlx::AnyPool::connect(&w._runs_db.url)
        .await
        .expect("the runs database");
    sqlx::query(
        "UPDATE runs SET owner = 'another-process', owner_name = 'another-replica' WHERE id = $1",
    )
    .bind(&run_id)
    .execute(&pool)
    .await
    .expect("taken over");
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends at the next heartbeat");
    let last = rest
        .last()
        .and_then(|e| e.as_ref().ok())
        .and_then(|e| e.event.clone());
    let Some(Event::RunFailed(failed)) = last else {
        panic!("the stream ends telling where the run went: {last:?}");
    };
    assert!(
        failed.error.contains("continues on another replica"),
        "{}",
        failed.error
    );
    // Nothing the old owner said is stored as the run's: its watchers
    // follow the new owner.
    let database = switchboard_db::DatabaseArgs::for_url(&w._runs_db.url)
        .open("runs", MIGRATIONS)
        .await
        .expect("the runs database");
    let repo = SqlRunsRepository::new(database.pool);
    let id: RunId = run_id.parse().expect("a run id");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stored = repo.run_events(id, 1, 1000).await.expect("events");
    assert!(
        stored.iter().all(|e| !e.event.is_last()),
        "the old owner stored an end: {:?}",
        stored.last()
    );
    let run = repo.find_run(id).await.expect("read").expect("found");
    assert_eq!(run.status, RunStatus::Running);
}
