//! Runs across runs-service replicas on one database: `CancelRun` from the
//! other replica, `WatchRun` from a sequence on the other replica, detached
//! runs, a killed replica's lease, a restarted replica's runs, `ListRuns`,
//! and heartbeat events on a quiet stream.

mod approvals;
mod budgets;
mod cluster;
mod run_limits;

use std::time::{Duration, Instant};

use switchboard_proto::runs::v1 as runs;
use switchboard_scripted_model::Turn;
use switchboard_test_support::{DbKind, authed, db_tests};
use tonic::Code;

use approvals::{
    a_denial_given_on_resume_reaches_the_model_as_text,
    a_gated_call_paused_on_one_replica_runs_once_when_resumed_through_the_other,
};
use budgets::{
    a_run_on_one_replica_counts_against_the_budgets_on_the_other,
    a_soft_budget_passed_on_one_replica_warns_on_the_other,
};
use cluster::{Cluster, cluster, kind_of, rest, run_id, sleep_then, until};
use run_limits::runs_in_flight_are_counted_over_both_replicas;

/// Replicas that notice a cancel or a lost lease within a fraction of a
/// second.
fn quick_leases(config: &mut switchboard_runs_service::Config) {
    config.run_stale_after = Duration::from_secs(3);
    config.replicas.run_heartbeat_interval = Duration::from_millis(200);
}

async fn a_run_started_on_one_replica_is_cancelled_through_the_other(kind: DbKind) {
    let mut c = cluster(kind, sleep_then(60_000, "never"), 2, quick_leases).await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());
    let mut stream = c.execute(&mut a, "wait", false).await.expect("started");
    let started = until(&mut stream, "tool_call_started").await;
    let id = run_id(&started);
    let response = b
        .cancel_run(authed(runs::CancelRunRequest { id: id.clone() }, &c.token))
        .await
        .expect("cancel accepted")
        .into_inner()
        .run
        .expect("a run");
    assert!(
        [
            runs::RunStatus::Running as i32,
            runs::RunStatus::Cancelled as i32
        ]
        .contains(&response.status)
    );
    let ending = rest(&mut stream).await;
    let last = ending.last().expect("a last event");
    assert_eq!(kind_of(last), "run_failed", "{ending:?}");
    let run = c.get_run(&mut b, &id).await;
    assert_eq!(run.status, runs::RunStatus::Cancelled as i32);
    assert_eq!(run.error, "cancelled by CancelRun");
    // An ended run cannot be cancelled again.
    let again = b
        .cancel_run(authed(runs::CancelRunRequest { id }, &c.token))
        .await
        .expect_err("already ended");
    assert_eq!(again.code(), Code::FailedPrecondition);
    c.clients.clear();
}

async fn a_detached_run_goes_on_after_its_stream_drops_and_is_watched_to_its_end_elsewhere(
    kind: DbKind,
) {
    let c = cluster(kind, sleep_then(1_000, "slept well"), 2, quick_leases).await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());
    let mut stream = c.execute(&mut a, "sleep", true).await.expect("started");
    let seen = until(&mut stream, "tool_call_started").await;
    let id = run_id(&seen);
    let last_seen = seen.last().expect("events").sequence;
    drop(stream);
    let watched = c.watch(&mut b, &id, last_seen + 1).await;
    let numbered: Vec<i64> = watched
        .iter()
        .filter(|e| kind_of(e) != "heartbeat")
        .map(|e| e.sequence)
        .collect();
    let expected: Vec<i64> = (last_seen + 1..last_seen + 1 + numbered.len() as i64).collect();
    assert_eq!(
        numbered, expected,
        "the rest of the stream, in order: {watched:?}"
    );
    assert_eq!(
        kind_of(watched.last().expect("events")),
        "run_completed",
        "{watched:?}"
    );
    assert!(watched.iter().any(|e| kind_of(e) == "tool_call_finished"));
    let run = c.get_run(&mut b, &id).await;
    assert_eq!(run.status, runs::RunStatus::Completed as i32);
    // From the start, on either replica: the whole stream again.
    let whole = c.watch(&mut a, &id, 0).await;
    assert_eq!(whole.first().map(|e| e.sequence), Some(1));
    assert_eq!(whole.len(), seen.len() + watched.len());
}

async fn a_run_whose_stream_drops_without_detach_is_cancelled(kind: DbKind) {
    let c = cluster(kind, sleep_then(60_000, "never"), 1, quick_leases).await;
    let mut a = c.clients[0].clone();
    let mut stream = c.execute(&mut a, "wait", false).await.expect("started");
    let id = run_id(&until(&mut stream, "tool_call_started").await);
    drop(stream);
    let run = c.watch(&mut a, &id, 0).await;
    let last = run.last().expect("events");
    assert_eq!(kind_of(last), "run_failed");
    let stored = c.get_run(&mut a, &id).await;
    assert_eq!(stored.status, runs::RunStatus::Cancelled as i32);
    assert_eq!(stored.error, "cancelled: the client closed the stream");
}

async fn a_killed_replicas_lease_expires_on_the_database_clock_and_the_thread_takes_a_new_run(
    kind: DbKind,
) {
    let mut turns = sleep_then(60_000, "never");
    turns.insert(1, Turn::Text("a fresh start".into()));
    let c = cluster(kind, turns, 1, quick_leases).await;
    let mut b = c.clients[0].clone();
    let mut doomed = c
        .process(
            "replica-a",
            &[
                ("SWITCHBOARD_RUN_STALE_AFTER", "2s"),
                ("SWITCHBOARD_RUN_HEARTBEAT_INTERVAL", "200ms"),
            ],
        )
        .await;
    let mut a = Cluster::client_of(&doomed.url).await;
    let mut stream = c.execute(&mut a, "wait", true).await.expect("started");
    let old = run_id(&until(&mut stream, "tool_call_started").await);
    doomed.child.kill().expect("kill -9");
    doomed.child.wait().expect("reaped");
    // The other replica's next ExecuteRun goes through once the lease is
    // past on the database's clock; until then the thread is busy.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut fresh = loop {
        match c.execute(&mut b, "again", false).await {
            Ok(stream) => break stream,
            Err(status) if status.code() == Code::FailedPrecondition => {
                assert!(Instant::now() < deadline, "the lease never expired");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(status) => panic!("{status:?}"),
        }
    };
    let events = rest(&mut fresh).await;
    assert_eq!(kind_of(events.last().expect("events")), "run_completed");
    let interrupted = c.get_run(&mut b, &old).await;
    assert_eq!(interrupted.status, runs::RunStatus::Interrupted as i32);
    assert!(
        interrupted.error.contains("lease expired"),
        "{}",
        interrupted.error
    );
}

async fn a_restarted_replica_frees_the_threads_of_its_previous_process_at_once(kind: DbKind) {
    let mut turns = sleep_then(60_000, "never");
    turns.insert(1, Turn::Text("a fresh start".into()));
    let c = cluster(kind, turns, 1, quick_leases).await;
    // A lease far longer than the test: only the restart frees the thread.
    let long = [("SWITCHBOARD_RUN_STALE_AFTER", "10m")];
    let mut before = c.process("replica-a", &long).await;
    let mut a = Cluster::client_of(&before.url).await;
    let mut stream = c.execute(&mut a, "wait", true).await.expect("started");
    let old = run_id(&until(&mut stream, "tool_call_started").await);
    before.child.kill().expect("kill -9");
    before.child.wait().expect("reaped");
    let after = c.process("replica-a", &long).await;
    let mut a = Cluster::client_of(&after.url).await;
    let mut fresh = c
        .execute(&mut a, "again", false)
        .await
        .expect("the thread is free at once");
    assert_eq!(
        kind_of(rest(&mut fresh).await.last().expect("events")),
        "run_completed"
    );
    let interrupted = c.get_run(&mut a, &old).await;
    assert_eq!(interrupted.status, runs::RunStatus::Interrupted as i32);
    assert!(
        interrupted.error.contains("restarted"),
        "{}",
        interrupted.error
    );
}

async fn a_quiet_run_stream_gets_heartbeat_events(kind: DbKind) {
    let c = cluster(kind, sleep_then(1_500, "awake"), 1, |config| {
        config.replicas.run_stream_heartbeat = Duration::from_millis(100);
    })
    .await;
    let mut a = c.clients[0].clone();
    let mut stream = c.execute(&mut a, "sleep", false).await.expect("started");
    let events = rest(&mut stream).await;
    let kinds: Vec<&str> = events.iter().map(kind_of).collect();
    let started = kinds.iter().position(|k| *k == "tool_call_started");
    let finished = kinds.iter().position(|k| *k == "tool_call_finished");
    let (Some(started), Some(finished)) = (started, finished) else {
        panic!("{kinds:?}")
    };
    let quiet = &events[started + 1..finished];
    assert!(!quiet.is_empty(), "{kinds:?}");
    assert!(
        quiet
            .iter()
            .all(|e| kind_of(e) == "heartbeat" && e.sequence == 0)
    );
    assert_eq!(kinds.last(), Some(&"run_completed"), "{events:?}");
    // Heartbeats are not stored: a replay has none.
    let replay = c.watch(&mut a, &run_id(&events), 0).await;
    assert!(replay.iter().all(|e| kind_of(e) != "heartbeat"));
}

async fn a_threads_runs_are_listed_newest_first_in_pages(kind: DbKind) {
    let turns = vec![Turn::Text("one".into()), Turn::Text("two".into())];
    let c = cluster(kind, turns, 1, |_| {}).await;
    let mut a = c.clients[0].clone();
    let mut ids = Vec::new();
    for text in ["first", "second"] {
        let mut stream = c.execute(&mut a, text, false).await.expect("started");
        ids.push(run_id(&rest(&mut stream).await));
    }
    let list = |page_token: String| {
        let mut a = a.clone();
        let request = authed(
            runs::ListRunsRequest {
                thread_id: c.thread_id.clone(),
                page_size: 1,
                page_token,
            },
            &c.token,
        );
        async move { a.list_runs(request).await.map(tonic::Response::into_inner) }
    };
    let first = list(String::new()).await.expect("listed");
    assert_eq!(first.runs[0].id, ids[1]);
    let second = list(first.next_page_token).await.expect("listed");
    assert_eq!(second.runs.len(), 1);
    assert_eq!(second.runs[0].id, ids[0]);
    assert!(second.next_page_token.is_empty(), "the last page");
    let refused = list("not-a-token".into()).await.expect_err("refused");
    assert_eq!(refused.code(), Code::InvalidArgument);
}

db_tests!(
    a_run_started_on_one_replica_is_cancelled_through_the_other,
    a_detached_run_goes_on_after_its_stream_drops_and_is_watched_to_its_end_elsewhere,
    a_run_whose_stream_drops_without_detach_is_cancelled,
    a_killed_replicas_lease_expires_on_the_database_clock_and_the_thread_takes_a_new_run,
    a_restarted_replica_frees_the_threads_of_its_previous_process_at_once,
    a_quiet_run_stream_gets_heartbeat_events,
    a_threads_runs_are_listed_newest_first_in_pages,
    a_gated_call_paused_on_one_replica_runs_once_when_resumed_through_the_other,
    a_denial_given_on_resume_reaches_the_model_as_text,
    a_run_on_one_replica_counts_against_the_budgets_on_the_other,
    a_soft_budget_passed_on_one_replica_warns_on_the_other,
    runs_in_flight_are_counted_over_both_replicas,
);
