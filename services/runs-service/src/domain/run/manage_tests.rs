//! Run management on in-memory ports: detached runs, `CancelRun` here and
//! through a heartbeat, lost leases, and `WatchRun` from a sequence.

use std::{sync::Arc, time::Duration};

use super::{
    tests::{THREAD, World, call, caller, settings, with_integrations},
    *,
};
use crate::{
    domain::{
        entities::{AgentConfig, Run, RunStatus},
        error::RunsError,
        events::{Envelope, RunEvent},
        ids::RunId,
        input::RunInput,
        ports::RunsRepository,
        usage::SoftBudgetPassed,
    },
    fakes::{FakeMcp, ScriptedTurn, ToolBehaviour},
};

/// Starts a run and returns its id with the rest of its stream.
async fn started(world: &World, detached: bool) -> (RunId, mpsc::Receiver<Envelope>) {
    let mut rx = world
        .orchestrator
        .start(
            caller(),
            THREAD,
            RunInput::UserMessage("go".into()),
            detached,
        )
        .await
        .expect("the run starts");
    match rx.recv().await.map(|e| e.event) {
        Some(RunEvent::Started(run)) => (run.id, rx),
        other => panic!("{other:?}"),
    }
}

/// Waits for the run's task to record an end.
async fn ended(world: &World, run_id: RunId) -> Run {
    loop {
        let run = world.repo.run(run_id).expect("stored");
        if run.status != RunStatus::Running {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn watched(world: &World, run: &Run, from: i64) -> Vec<Envelope> {
    let mut rx = world.orchestrator.watch(run, from);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event.expect("an event"));
    }
    events
}

fn slow_tool_world() -> (FakeMcp, AgentConfig, Vec<ScriptedTurn>) {
    let mcp = FakeMcp::default().tool(
        "i1",
        "slow",
        ToolBehaviour::Answer("done".into(), Duration::from_millis(200)),
    );
    let script = vec![
        ScriptedTurn::Call(vec![call("i1__slow", "{}")]),
        ScriptedTurn::Say("all done".into()),
    ];
    (mcp, with_integrations(&["i1"]), script)
}

#[tokio::test]
async fn a_detached_run_goes_on_when_its_client_leaves_and_can_be_watched_to_its_end() {
    let (mcp, config, script) = slow_tool_world();
    let world = World::new(mcp, config, script).await;
    let (run_id, rx) = started(&world, true).await;
    drop(rx);
    let run = ended(&world, run_id).await;
    assert_eq!(run.status, RunStatus::Completed);
    let events = watched(&world, &run, 0).await;
    let sequences: Vec<i64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=sequences.len() as i64).collect::<Vec<_>>());
    assert!(matches!(events[0].event, RunEvent::Started(_)));
    assert!(matches!(
        events.last().map(|e| &e.event),
        Some(RunEvent::Completed(_))
    ));
    // From a sequence: the rest only.
    let rest = watched(&world, &run, 3).await;
    assert_eq!(rest.first().map(|e| e.sequence), Some(3));
    assert_eq!(rest.len(), events.len() - 2);
}

#[tokio::test]
async fn cancel_run_stops_a_run_of_this_process_at_once() {
    let world = World::new(
        FakeMcp::default(),
        AgentConfig::default(),
        vec![ScriptedTurn::Hang],
    )
    .await;
    let (run_id, mut rx) = started(&world, false).await;
    let run = world.repo.run(run_id).expect("stored");
    let cancelled = world.orchestrator.cancel(&run).await.expect("cancelled");
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert_eq!(cancelled.error.as_deref(), Some("cancelled by CancelRun"));
    let mut last = None;
    while let Some(envelope) = rx.recv().await {
        last = Some(envelope.event);
    }
    assert!(
        matches!(&last, Some(RunEvent::Failed { error, .. }) if error == "cancelled by CancelRun"),
        "{last:?}"
    );
    let again = world.orchestrator.cancel(&cancelled).await;
    assert!(
        matches!(again, Err(RunsError::FailedPrecondition(_))),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_cancel_requested_elsewhere_reaches_the_run_through_its_heartbeat() {
    let world = World::new(
        FakeMcp::default(),
        AgentConfig::default(),
        vec![ScriptedTurn::Hang],
    )
    .await;
    let (run_id, _rx) = started(&world, false).await;
    // Another replica's CancelRun: only the flag in storage.
    world
        .repo
        .request_cancel(run_id, "cancelled by CancelRun")
        .await
        .expect("requested");
    let repo: Arc<dyn RunsRepository> = world.repo.clone();
    keep_leases(
        Arc::downgrade(&repo),
        world.active.clone(),
        LeaseSettings {
            lease: Duration::from_secs(30),
            heartbeat_every: Duration::from_millis(10),
        },
        None,
    );
    let run = ended(&world, run_id).await;
    assert_eq!(run.status, RunStatus::Cancelled);
}

#[tokio::test]
async fn a_run_whose_lease_was_lost_stops_even_while_it_writes_nothing() {
    let world = World::new(
        FakeMcp::default(),
        AgentConfig::default(),
        vec![ScriptedTurn::Hang],
    )
    .await;
    let (run_id, mut rx) = started(&world, false).await;
    // Another replica saw the lease expire and interrupted the run.
    world.repo.end_elsewhere(run_id, RunStatus::Interrupted);
    let repo: Arc<dyn RunsRepository> = world.repo.clone();
    keep_leases(
        Arc::downgrade(&repo),
        world.active.clone(),
        LeaseSettings {
            lease: Duration::from_secs(30),
            heartbeat_every: Duration::from_millis(10),
        },
        None,
    );
    let mut last = None;
    while let Some(envelope) = rx.recv().await {
        last = Some(envelope.event);
    }
    assert!(
        matches!(&last, Some(RunEvent::Failed { run, .. }) if run.status == RunStatus::Interrupted),
        "{last:?}"
    );
    assert!(world.active.ids().is_empty());
}

#[tokio::test]
async fn watching_an_interrupted_run_ends_with_its_reason() {
    let world = World::new(
        FakeMcp::default(),
        AgentConfig::default(),
        vec![ScriptedTurn::Hang],
    )
    .await;
    let (run_id, _rx) = started(&world, false).await;
    world.repo.end_elsewhere(run_id, RunStatus::Interrupted);
    let run = world.repo.run(run_id).expect("stored");
    let events = watched(&world, &run, 1).await;
    assert!(matches!(events[0].event, RunEvent::Started(_)));
    assert!(
        matches!(&events.last().map(|e| &e.event), Some(RunEvent::Failed { error, .. }) if error == "the process running it stopped"),
        "{events:?}"
    );
}

#[tokio::test]
async fn past_its_bound_a_run_stores_only_its_last_event() {
    let (mcp, config, script) = slow_tool_world();
    let mut world = World::new(mcp, config, script).await;
    world.orchestrator = Orchestrator::new(
        world.ports.clone(),
        RunSettings {
            max_stored_events: 3,
            ..settings()
        },
        ActiveRuns::default(),
    );
    let (run_id, mut rx) = started(&world, false).await;
    let mut sent = 1;
    while rx.recv().await.is_some() {
        sent += 1;
    }
    let stored = world.repo.run_events(run_id, 0, 1000).await.expect("read");
    let sequences: Vec<i64> = stored.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, vec![1, 2, 3, sent]);
    assert!(stored.last().is_some_and(|e| e.event.is_last()));
}

#[tokio::test]
async fn past_its_monthly_token_budget_an_organization_starts_no_new_run() {
    let script = (0..3).map(|_| ScriptedTurn::Say("ok".into())).collect();
    let mut world = World::new(FakeMcp::default(), AgentConfig::default(), script).await;
    let with_budget = |budgets: Budgets| {
        Orchestrator::new(
            world.ports.clone(),
            RunSettings {
                budgets,
                ..settings()
            },
            ActiveRuns::default(),
        )
    };
    // Each run of the fake model uses 11 tokens: a second starts below 12,
    // a third does not.
    world.orchestrator = with_budget(Budgets {
        monthly_tokens: Some(12),
        ..Budgets::default()
    });
    world.say("one").await;
    world.say("two").await;
    let refused = world
        .orchestrator
        .start(
            caller(),
            THREAD,
            RunInput::UserMessage("three".into()),
            false,
        )
        .await
        .err();
    let Some(RunsError::QuotaExceeded(message)) = refused else {
        panic!("refused past the budget: {refused:?}");
    };
    assert!(
        message.contains("22 of the 12 tokens of its monthly token budget"),
        "{message}"
    );
    // An override for the organization lifts it.
    world.orchestrator = with_budget(Budgets {
        monthly_tokens: Some(12),
        overrides: [("org".to_owned(), None)].into(),
        ..Budgets::default()
    });
    let events = world.say("three").await;
    assert!(
        matches!(events.last(), Some(RunEvent::Completed(_))),
        "{events:?}"
    );
}

#[tokio::test]
async fn past_its_soft_budget_an_organization_is_warned_and_its_run_goes_on() {
    let script = (0..3).map(|_| ScriptedTurn::Say("ok".into())).collect();
    let mut world = World::new(FakeMcp::default(), AgentConfig::default(), script).await;
    world.orchestrator = Orchestrator::new(
        world.ports.clone(),
        RunSettings {
            budgets: Budgets {
                soft_monthly_tokens: Some(11),
                ..Budgets::default()
            },
            ..settings()
        },
        ActiveRuns::default(),
    );
    let warned = |events: &[RunEvent]| {
        events.iter().find_map(|e| match e {
            RunEvent::SoftBudgetPassed(passed) => Some(*passed),
            _ => None,
        })
    };
    // Each run of the fake model uses 11 tokens: the first starts below the
    // soft budget, the second at it.
    let first = world.say("one").await;
    assert_eq!(warned(&first), None);
    let second = world.say("two").await;
    assert!(matches!(second[0], RunEvent::Started(_)), "{second:?}");
    assert_eq!(
        warned(&second[1..2]),
        Some(SoftBudgetPassed {
            used_tokens: 11,
            soft_budget_tokens: 11,
        }),
        "told right after the start: {second:?}"
    );
    assert!(
        matches!(second.last(), Some(RunEvent::Completed(_))),
        "the run goes on: {second:?}"
    );
}
