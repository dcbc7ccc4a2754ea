//! A run's state changes are compare-and-set: a run that ended elsewhere
//! (interrupted by another replica's reaper) is never overwritten, and a
//! paused run resumes together with its client's results, or not at all.

use std::time::Duration;

use switchboard_db::DatabaseArgs;
use switchboard_runs_service::{
    domain::{
        entities::{Message, Part, Role, Run, RunStatus, Thread},
        ids::{AgentId, MessageId, ThreadId},
        ports::{RepositoryError, RunsRepository},
    },
    outbound::sql::{MIGRATIONS, Replica, SqlRunsRepository},
};
use switchboard_test_support::{DbKind, Store, TestDb, store_tests};

use crate::stores::runs_repository;

/// The SQL repository on a fresh database of `kind`, with a thread.
async fn repository(kind: DbKind) -> (TestDb, SqlRunsRepository, Thread) {
    let db = TestDb::new(kind).await.expect("a test database");
    let database = DatabaseArgs::for_url(&db.url)
        .open("runs", MIGRATIONS)
        .await
        .expect("migrated");
    let repo = SqlRunsRepository::new(database.pool);
    let thread = stored_thread(&repo).await;
    (db, repo, thread)
}

async fn stored_thread(repo: &dyn RunsRepository) -> Thread {
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

fn run(thread: &Thread) -> Run {
    Run::started(thread.id, thread.agent_id, 200)
}

fn result(run: &Run, content: &str) -> Message {
    Message {
        id: MessageId::new(),
        thread_id: run.thread_id,
        run_id: Some(run.id),
        seq: 0,
        role: Role::Tool,
        parts: vec![Part::ToolResult {
            tool_call_id: "c1".into(),
            name: "ask".into(),
            content: content.into(),
            is_error: false,
        }],
        created_at: 300,
    }
}

async fn an_interrupted_run_is_never_overwritten(kind: DbKind) {
    let (_db, repo, thread) = repository(kind).await;
    // The run's process holds a lease it will not renew.
    let repo = repo.with_replica(Replica::new(None, Duration::from_millis(1)));
    let mut r = run(&thread);
    repo.start_run(&r).await.expect("started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Another replica saw the run's lease expire and ended it.
    assert_eq!(repo.interrupt_expired_runs().await.expect("reaped"), 1);

    r.status = RunStatus::Completed;
    r.steps = 3;
    let late = result(&r, "late");
    assert!(matches!(
        repo.update_run_with(&r, std::slice::from_ref(&late)).await,
        Err(RepositoryError::RunEnded)
    ));
    let stored = repo.find_run(r.id).await.expect("read").expect("found");
    assert_eq!(stored.status, RunStatus::Interrupted);
    assert_eq!(stored.steps, 0);
    assert!(
        repo.list_messages(thread.id, 0, 10)
            .await
            .expect("read")
            .is_empty(),
        "nothing the old writer sent was stored"
    );
    // The thread takes a new run at once.
    repo.start_run(&run(&thread)).await.expect("a new run");
}

async fn a_paused_run_resumes_with_its_results_in_one_write(store: Store) {
    let (_db, repo) = runs_repository(store).await;
    let thread = stored_thread(&*repo).await;
    let mut r = run(&thread);
    r.status = RunStatus::RequiresAction;
    repo.start_run(&r).await.expect("started paused");

    r.status = RunStatus::Running;
    r.updated_at = 300;
    let seqs = repo
        .resume_run_with(&r, &[result(&r, "Ada")])
        .await
        .expect("resumed");
    assert_eq!(seqs, Some(vec![1]));
    let stored = repo.find_run(r.id).await.expect("read").expect("found");
    assert_eq!(stored.status, RunStatus::Running);

    // A second resume (another replica, a retried request) writes nothing.
    assert_eq!(
        repo.resume_run_with(&r, &[result(&r, "again")])
            .await
            .expect("answered"),
        None
    );
    let messages = repo.list_messages(thread.id, 0, 10).await.expect("read");
    assert_eq!(messages.len(), 1, "{messages:?}");
}

store_tests!(
    every_store: [a_paused_run_resumes_with_its_results_in_one_write],
    // A run ends elsewhere when another replica finds its lease expired on
    // the database's clock; the fake is one process whose leases never
    // expire, so only the databases can end a run that way.
    databases_only: [an_interrupted_run_is_never_overwritten],
);
