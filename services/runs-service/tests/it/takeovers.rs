//! Runs that continue on another replica, in storage: two or three
//! repositories on one database stand for replica processes. A stopped run
//! that keeps its caller is taken over by exactly one replica and never
//! interrupted while takeovers remain; its old owner can no longer write
//! it; a run lets go of its caller when it stops running; a new run of the
//! thread, the takeover limit, or a whole lease with no replica taking it,
//! ends it interrupted.

use std::time::Duration;

use switchboard_db::{DatabaseArgs, now_millis};
use switchboard_runs_service::{
    domain::{
        entities::{Run, RunStatus},
        ids::RunId,
        ports::{LeaseState, RepositoryError, RunTakeovers as _, RunsRepository, SealedCaller},
    },
    outbound::sql::{MIGRATIONS, Replica, SqlRunsRepository},
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

const HOUR: Duration = Duration::from_secs(3600);
/// A lease that runs out while the test waits [`PAST_SHORT`].
const SHORT: Duration = Duration::from_millis(100);
const PAST_SHORT: Duration = Duration::from_millis(200);

async fn replica(db: &TestDb, name: Option<&str>, lease: Duration, max: u32) -> SqlRunsRepository {
    let database = DatabaseArgs::for_url(&db.url)
        .open("runs", MIGRATIONS)
        .await
        .expect("migrated");
    SqlRunsRepository::new(database.pool)
        .with_replica(Replica::new(name.map(str::to_owned), lease).with_max_takeovers(max))
}

fn sealed() -> SealedCaller {
    SealedCaller {
        key_id: "k1".into(),
        sealed: "c2VhbGVk".into(),
    }
}

/// A running run of a new thread, started by `repo` with its caller kept.
async fn kept_run(repo: &SqlRunsRepository) -> Run {
    let thread = crate::stores::new_thread(repo, "org", "alice").await;
    let now = now_millis();
    let run = Run::started(thread.id, thread.agent_id, now);
    repo.start_run(&run).await.expect("started");
    repo.keep_caller(run.id, &sealed()).await.expect("kept");
    run
}

async fn status(repo: &SqlRunsRepository, id: RunId) -> RunStatus {
    repo.find_run(id)
        .await
        .expect("read")
        .expect("found")
        .status
}

async fn one_replica_takes_a_stopped_run_over_and_its_old_owner_cannot_write_it(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let stopped = replica(&db, None, SHORT, 2).await;
    let run = kept_run(&stopped).await;
    tokio::time::sleep(PAST_SHORT).await;
    let (b, c) = (
        replica(&db, None, HOUR, 2).await,
        replica(&db, None, HOUR, 2).await,
    );
    // Not interrupted: it continues.
    assert_eq!(b.interrupt_expired_runs().await.expect("swept"), 0);
    let (by_b, by_c) = tokio::join!(b.claim_stopped_runs(16), c.claim_stopped_runs(16));
    let (by_b, by_c) = (by_b.expect("claimed"), by_c.expect("claimed"));
    assert_eq!(by_b.len() + by_c.len(), 1, "exactly one replica wins");
    let claimed = by_b.iter().chain(&by_c).next().expect("claimed");
    assert_eq!(claimed.run.id, run.id);
    assert_eq!(claimed.takeovers, 1);
    assert_eq!(claimed.caller, sealed());
    // Nothing left to claim, by either.
    assert!(b.claim_stopped_runs(16).await.expect("read").is_empty());
    // The old owner, had it lived on, loses the run at its next write and
    // its next heartbeat.
    let mut late = run.clone();
    late.steps = 9;
    assert!(matches!(
        stopped.update_run(&late).await,
        Err(RepositoryError::RunEnded)
    ));
    assert_eq!(
        stopped.heartbeat(&[run.id]).await.expect("beat"),
        vec![(run.id, LeaseState::Lost)]
    );
    let owner = if by_b.is_empty() { &c } else { &b };
    assert_eq!(
        owner.heartbeat(&[run.id]).await.expect("beat"),
        vec![(run.id, LeaseState::Held)]
    );
    assert_eq!(status(owner, run.id).await, RunStatus::Running);
}

async fn a_run_taken_over_as_often_as_allowed_ends_interrupted(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let first = replica(&db, None, SHORT, 1).await;
    let run = kept_run(&first).await;
    tokio::time::sleep(PAST_SHORT).await;
    let second = replica(&db, None, SHORT, 1).await;
    assert_eq!(
        second.claim_stopped_runs(16).await.expect("claimed").len(),
        1
    );
    // The second replica stops too.
    tokio::time::sleep(PAST_SHORT).await;
    let third = replica(&db, None, HOUR, 1).await;
    assert!(third.claim_stopped_runs(16).await.expect("read").is_empty());
    assert_eq!(third.interrupt_expired_runs().await.expect("swept"), 1);
    let stored = third.find_run(run.id).await.expect("read").expect("found");
    assert_eq!(stored.status, RunStatus::Interrupted);
    assert!(stored.error.expect("a reason").contains("lease expired"));
}

async fn a_run_that_pauses_lets_go_of_its_caller(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let owner = replica(&db, None, SHORT, 2).await;
    let mut run = kept_run(&owner).await;
    run.status = RunStatus::RequiresAction;
    owner.update_run(&run).await.expect("paused");
    assert!(
        owner
            .resume_run(run.id, now_millis())
            .await
            .expect("resumed")
    );
    // Back to running without a kept caller (a resume keeps the new
    // caller's again): once stopped, it is interrupted, not taken over.
    tokio::time::sleep(PAST_SHORT).await;
    let other = replica(&db, None, HOUR, 2).await;
    assert!(other.claim_stopped_runs(16).await.expect("read").is_empty());
    assert_eq!(other.interrupt_expired_runs().await.expect("swept"), 1);
}

async fn a_new_run_of_the_thread_supersedes_a_stopped_run_that_continues(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let stopped = replica(&db, None, SHORT, 2).await;
    let run = kept_run(&stopped).await;
    tokio::time::sleep(PAST_SHORT).await;
    let other = replica(&db, None, HOUR, 2).await;
    let mut next = run.clone();
    next.id = RunId::new();
    other
        .start_run(&next)
        .await
        .expect("the thread takes a new run");
    assert_eq!(status(&other, run.id).await, RunStatus::Interrupted);
    assert!(other.claim_stopped_runs(16).await.expect("read").is_empty());
}

async fn a_restarted_replica_takes_its_previous_process_runs_over_at_once(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let before = replica(&db, Some("pod-a"), HOUR, 2).await;
    let run = kept_run(&before).await;
    let after = replica(&db, Some("pod-a"), HOUR, 2).await;
    assert_eq!(
        after
            .interrupt_previous_process_runs()
            .await
            .expect("swept"),
        0
    );
    // Its lease has an hour to run, but its process is provably gone.
    let claimed = after.claim_stopped_runs(16).await.expect("claimed");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].run.id, run.id);
    let neighbour = replica(&db, Some("pod-b"), HOUR, 2).await;
    let theirs = kept_run(&neighbour).await;
    assert!(after.claim_stopped_runs(16).await.expect("read").is_empty());
    assert_eq!(status(&after, theirs.id).await, RunStatus::Running);
}

async fn claims_come_a_batch_at_a_time(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let stopped = replica(&db, None, SHORT, 2).await;
    for _ in 0..5 {
        kept_run(&stopped).await;
    }
    tokio::time::sleep(PAST_SHORT).await;
    let other = replica(&db, None, HOUR, 2).await;
    assert_eq!(other.claim_stopped_runs(2).await.expect("claimed").len(), 2);
    assert_eq!(
        other.claim_stopped_runs(16).await.expect("claimed").len(),
        3
    );
}

async fn a_stopped_run_no_replica_takes_over_is_interrupted_a_lease_later(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let stopped = replica(&db, None, SHORT, 2).await;
    let run = kept_run(&stopped).await;
    tokio::time::sleep(PAST_SHORT).await;
    // A replica with an hour's lease waits an hour for a taker.
    let patient = replica(&db, None, HOUR, 2).await;
    assert_eq!(patient.interrupt_expired_runs().await.expect("swept"), 0);
    // Past a whole lease since it expired, nobody took it: interrupted.
    tokio::time::sleep(PAST_SHORT).await;
    let sweeper = replica(&db, None, SHORT, 2).await;
    assert_eq!(sweeper.interrupt_expired_runs().await.expect("swept"), 1);
    assert_eq!(status(&sweeper, run.id).await, RunStatus::Interrupted);
}

async fn a_process_never_takes_over_its_own_run(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let own = replica(&db, Some("pod-a"), SHORT, 2).await;
    kept_run(&own).await;
    // Its lease expired under it (its heartbeats failed): its own task is
    // stopping it; another replica takes it.
    tokio::time::sleep(PAST_SHORT).await;
    assert!(own.claim_stopped_runs(16).await.expect("read").is_empty());
    let other = replica(&db, Some("pod-b"), HOUR, 2).await;
    assert_eq!(
        other.claim_stopped_runs(16).await.expect("claimed").len(),
        1
    );
}

db_tests!(
    a_process_never_takes_over_its_own_run,
    a_stopped_run_no_replica_takes_over_is_interrupted_a_lease_later,
    one_replica_takes_a_stopped_run_over_and_its_old_owner_cannot_write_it,
    a_run_taken_over_as_often_as_allowed_ends_interrupted,
    a_run_that_pauses_lets_go_of_its_caller,
    a_new_run_of_the_thread_supersedes_a_stopped_run_that_continues,
    a_restarted_replica_takes_its_previous_process_runs_over_at_once,
    claims_come_a_batch_at_a_time,
);
