//! Run leases across replicas, on the database's clock: two repositories on
//! one database stand for two replica processes.

use std::time::Duration;

use switchboard_db::{DatabaseArgs, now_millis};
use switchboard_runs_service::{
    domain::{
        entities::{PendingCall, Run, RunStatus, Thread},
        events::{Envelope, RunEvent},
        ids::{AgentId, RunId, ThreadId},
        ports::{LeaseState, RepositoryError, RunsRepository},
    },
    outbound::sql::{MIGRATIONS, Replica, SqlRunsRepository},
};
use switchboard_test_support::{DbKind, Store, TestDb, store_tests};

use crate::stores::runs_repository;

const HOUR: Duration = Duration::from_secs(3600);

/// A replica process on the test database.
async fn replica(db: &TestDb, name: Option<&str>, lease: Duration) -> SqlRunsRepository {
    let database = DatabaseArgs::for_url(&db.url)
        .open("runs", MIGRATIONS)
        .await
        .expect("migrated");
    SqlRunsRepository::new(database.pool).with_replica(Replica::new(name.map(str::to_owned), lease))
}

async fn thread(repo: &dyn RunsRepository) -> Thread {
    let thread = Thread {
        id: ThreadId::new(),
        org_id: "org".into(),
        user_id: "alice".into(),
        agent_id: AgentId::new(),
        title: String::new(),
        created_at: 100,
        updated_at: 100,
    };
    repo.insert_thread(&thread).await.expect("thread");
    thread
}

/// A run whose replica's clock says `at` (Unix ms).
fn run(thread: &Thread, at: i64) -> Run {
    Run::started(thread.id, thread.agent_id, at)
}

async fn status(repo: &SqlRunsRepository, id: RunId) -> (RunStatus, Option<String>) {
    let run = repo.find_run(id).await.expect("read").expect("found");
    (run.status, run.error)
}

/// Waits until the database's clock is past a lease of `lease`.
async fn outlive(lease: Duration) {
    tokio::time::sleep(lease + Duration::from_millis(50)).await;
}

async fn leases_expire_on_the_database_clock_whatever_the_replica_clocks_say(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    // A replica whose clock is an hour late holds a long lease; one whose
    // clock is an hour early holds a short one.
    let late = replica(&db, None, HOUR).await;
    let early = replica(&db, None, Duration::from_millis(1)).await;
    let held = run(&thread(&late).await, now_millis() - 3_600_000);
    late.start_run(&held).await.expect("started");
    let lapsed = run(&thread(&early).await, now_millis() + 3_600_000);
    early.start_run(&lapsed).await.expect("started");
    outlive(Duration::from_millis(1)).await;
    assert_eq!(late.interrupt_expired_runs().await.expect("swept"), 1);
    assert_eq!(status(&late, held.id).await.0, RunStatus::Running);
    let (lapsed_status, reason) = status(&late, lapsed.id).await;
    assert_eq!(lapsed_status, RunStatus::Interrupted);
    assert!(reason.expect("a reason").contains("lease expired"));
    // The lapsed run's process learns it lost the run at its heartbeat.
    assert_eq!(
        early
            .heartbeat(std::slice::from_ref(&lapsed.id))
            .await
            .expect("heartbeat"),
        vec![(lapsed.id, LeaseState::Lost)]
    );
}

async fn a_new_run_takes_the_thread_of_a_run_whose_lease_expired_at_once(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let live = replica(&db, None, HOUR).await;
    let dying = replica(&db, None, Duration::from_millis(1)).await;
    let other = replica(&db, None, HOUR).await;
    let busy = thread(&live).await;
    live.start_run(&run(&busy, now_millis()))
        .await
        .expect("started");
    assert!(matches!(
        other.start_run(&run(&busy, now_millis())).await,
        Err(RepositoryError::ThreadBusy)
    ));
    let freed = thread(&dying).await;
    let old = run(&freed, now_millis());
    dying.start_run(&old).await.expect("started");
    outlive(Duration::from_millis(1)).await;
    // No sweep ran: the new run itself finds the old lease expired.
    let new = run(&freed, now_millis());
    other
        .start_run(&new)
        .await
        .expect("the thread takes the new run");
    assert_eq!(status(&other, old.id).await.0, RunStatus::Interrupted);
    assert_eq!(status(&other, new.id).await.0, RunStatus::Running);
}

async fn heartbeats_carry_cancels_and_tell_a_replica_which_runs_it_lost(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let owner = replica(&db, None, HOUR).await;
    let other = replica(&db, None, HOUR).await;
    let kept = run(&thread(&owner).await, now_millis());
    let cancelled = run(&thread(&owner).await, now_millis());
    for r in [&kept, &cancelled] {
        owner.start_run(r).await.expect("started");
    }
    let asked = other
        .request_cancel(cancelled.id, "cancelled by CancelRun")
        .await
        .expect("requested")
        .expect("found");
    assert_eq!(asked.status, RunStatus::Running, "its owner ends it");
    let ids = [kept.id, cancelled.id, RunId::new()];
    assert_eq!(
        owner.heartbeat(&ids).await.expect("heartbeat"),
        vec![
            (kept.id, LeaseState::Held),
            (cancelled.id, LeaseState::CancelRequested),
            (ids[2], LeaseState::Lost),
        ]
    );
    // A replica never renews a lease it does not hold.
    assert_eq!(
        other
            .heartbeat(std::slice::from_ref(&kept.id))
            .await
            .expect("heartbeat"),
        vec![(kept.id, LeaseState::Lost)]
    );
    // A run its owner ended itself stays its owner's while its task sends
    // its last events.
    let mut done = kept.clone();
    done.status = RunStatus::Completed;
    owner.update_run(&done).await.expect("completed");
    assert_eq!(
        owner
            .heartbeat(std::slice::from_ref(&kept.id))
            .await
            .expect("heartbeat"),
        vec![(kept.id, LeaseState::Held)]
    );
    // A paused run has no process: it is cancelled at once.
    let mut paused = run(&thread(&owner).await, now_millis());
    owner.start_run(&paused).await.expect("started");
    paused.status = RunStatus::RequiresAction;
    owner.update_run(&paused).await.expect("paused");
    let ended = other
        .request_cancel(paused.id, "cancelled by CancelRun")
        .await
        .expect("cancelled")
        .expect("found");
    assert_eq!(ended.status, RunStatus::Cancelled);
    assert_eq!(ended.error.as_deref(), Some("cancelled by CancelRun"));
}

async fn a_cancel_reaches_a_running_run_at_its_next_heartbeat(store: Store) {
    let (_db, repo) = runs_repository(store).await;
    let kept = run(&thread(&*repo).await, now_millis());
    let cancelled = run(&thread(&*repo).await, now_millis());
    for r in [&kept, &cancelled] {
        repo.start_run(r).await.expect("started");
    }
    let asked = repo
        .request_cancel(cancelled.id, "cancelled by CancelRun")
        .await
        .expect("requested")
        .expect("found");
    assert_eq!(asked.status, RunStatus::Running, "its task ends it");
    let ids = [kept.id, cancelled.id, RunId::new()];
    assert_eq!(
        repo.heartbeat(&ids).await.expect("heartbeat"),
        vec![
            (kept.id, LeaseState::Held),
            (cancelled.id, LeaseState::CancelRequested),
            (ids[2], LeaseState::Lost),
        ]
    );
    let mut done = kept.clone();
    done.status = RunStatus::Completed;
    repo.update_run(&done).await.expect("completed");
    assert_eq!(
        repo.heartbeat(std::slice::from_ref(&kept.id))
            .await
            .expect("heartbeat"),
        vec![(kept.id, LeaseState::Held)],
        "a run its own task ended is not lost"
    );
    let mut paused = run(&thread(&*repo).await, now_millis());
    repo.start_run(&paused).await.expect("started");
    paused.status = RunStatus::RequiresAction;
    paused.pending = vec![PendingCall {
        id: "call_1".into(),
        name: "confirm".into(),
        arguments: "{}".into(),
        input: None,
        approval: None,
    }];
    repo.update_run(&paused).await.expect("paused");
    let ended = repo
        .request_cancel(paused.id, "cancelled by CancelRun")
        .await
        .expect("cancelled")
        .expect("found");
    assert_eq!(ended.status, RunStatus::Cancelled);
    assert_eq!(ended.error.as_deref(), Some("cancelled by CancelRun"));
    assert!(ended.pending.is_empty(), "its calls are no longer awaited");
    assert_eq!(
        repo.request_cancel(RunId::new(), "cancelled by CancelRun")
            .await
            .expect("asked"),
        None
    );
}

async fn a_restarted_replica_interrupts_the_runs_its_previous_process_left(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let before = replica(&db, Some("pod-a"), HOUR).await;
    let neighbour = replica(&db, Some("pod-b"), HOUR).await;
    let left = run(&thread(&before).await, now_millis());
    before.start_run(&left).await.expect("started");
    let theirs = run(&thread(&neighbour).await, now_millis());
    neighbour.start_run(&theirs).await.expect("started");
    let after = replica(&db, Some("pod-a"), HOUR).await;
    assert_eq!(
        after
            .interrupt_previous_process_runs()
            .await
            .expect("swept"),
        1
    );
    let (left_status, reason) = status(&after, left.id).await;
    assert_eq!(left_status, RunStatus::Interrupted);
    assert!(reason.expect("a reason").contains("restarted"));
    assert_eq!(status(&after, theirs.id).await.0, RunStatus::Running);
    let nameless = replica(&db, None, HOUR).await;
    assert_eq!(
        nameless
            .interrupt_previous_process_runs()
            .await
            .expect("swept"),
        0
    );
}

async fn run_events_are_stored_once_and_read_from_a_sequence(store: Store) {
    let (_db, repo) = runs_repository(store).await;
    let r = run(&thread(&*repo).await, now_millis());
    repo.start_run(&r).await.expect("started");
    assert_eq!(repo.last_run_event(r.id).await.expect("read"), 0);
    for sequence in 1..=5 {
        let event = Envelope {
            run_id: r.id,
            sequence,
            event: RunEvent::TextDelta(format!("part {sequence}")),
        };
        repo.append_run_events(std::slice::from_ref(&event))
            .await
            .expect("stored");
        repo.append_run_events(&[event])
            .await
            .expect("a repeat is ignored");
    }
    let from_three = repo.run_events(r.id, 3, 100).await.expect("read");
    let seen: Vec<(i64, String)> = from_three
        .into_iter()
        .map(|e| match e.event {
            RunEvent::TextDelta(text) => (e.sequence, text),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (3, "part 3".into()),
            (4, "part 4".into()),
            (5, "part 5".into())
        ]
    );
    assert_eq!(repo.run_events(r.id, 1, 2).await.expect("read").len(), 2);
    assert_eq!(repo.last_run_event(r.id).await.expect("read"), 5);

    // A batch longer than one statement, with events stored before and a
    // repeat inside it, is stored whole and once.
    let batch: Vec<Envelope> = (4..=200)
        .chain([150])
        .map(|sequence| Envelope {
            run_id: r.id,
            sequence,
            event: RunEvent::TextDelta(format!("part {sequence}")),
        })
        .collect();
    repo.append_run_events(&batch).await.expect("stored");
    let all = repo.run_events(r.id, 1, 1000).await.expect("read");
    let sequences: Vec<i64> = all.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=200).collect::<Vec<_>>());
    assert_eq!(repo.last_run_event(r.id).await.expect("read"), 200);
}

async fn a_threads_runs_list_newest_first_in_pages(store: Store) {
    let (_db, repo) = runs_repository(store).await;
    let t = thread(&*repo).await;
    let mut ids = Vec::new();
    for at in [1000, 2000, 3000] {
        let mut r = run(&t, at);
        repo.start_run(&r).await.expect("started");
        r.status = RunStatus::Completed;
        repo.update_run(&r).await.expect("ended");
        ids.push(r.id);
    }
    let first = repo.list_runs(t.id, None, 2).await.expect("listed");
    assert_eq!(
        first.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[2], ids[1]]
    );
    let last = &first[1];
    let rest = repo
        .list_runs(t.id, Some((last.created_at, last.id.to_string())), 2)
        .await
        .expect("listed");
    assert_eq!(rest.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ids[0]]);
}

store_tests!(
    every_store: [
        a_cancel_reaches_a_running_run_at_its_next_heartbeat,
        run_events_are_stored_once_and_read_from_a_sequence,
        a_threads_runs_list_newest_first_in_pages,
    ],
    // Leases are a rule between processes on one database and its clock
    // (two repositories on one database stand for two replicas); the fake
    // is one process whose leases never expire and whose instances share
    // nothing, so these rules hold on the databases only.
    databases_only: [
        leases_expire_on_the_database_clock_whatever_the_replica_clocks_say,
        a_new_run_takes_the_thread_of_a_run_whose_lease_expired_at_once,
        heartbeats_carry_cancels_and_tell_a_replica_which_runs_it_lost,
        a_restarted_replica_interrupts_the_runs_its_previous_process_left,
    ],
);
