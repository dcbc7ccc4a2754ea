//! The runs repository a suite runs on: a fresh SQLite or PostgreSQL
//! database, or the in-memory fake the run loop's unit tests use.

use switchboard_db::DatabaseArgs;
use switchboard_runs_service::{
    domain::{
        entities::Thread,
        ids::{AgentId, ThreadId},
        ports::RunsRepository,
    },
    fakes::MemoryRepository,
    outbound::sql::{MIGRATIONS, SqlRunsRepository},
};
use switchboard_test_support::{Store, TestDb};

/// The repository of `store`, with the database it lives in (none for the
/// fake), removed when dropped.
pub async fn runs_repository(store: Store) -> (Option<TestDb>, Box<dyn RunsRepository>) {
    match store {
        Store::Db(kind) => {
            let db = TestDb::new(kind).await.expect("a test database");
            let database = DatabaseArgs::for_url(&db.url)
                .open("runs", MIGRATIONS)
                .await
                .expect("migrated");
            (Some(db), Box::new(SqlRunsRepository::new(database.pool)))
        }
        Store::Memory => (None, Box::new(MemoryRepository::default())),
    }
}

/// A pool on the runs database at `url`, migrated.
pub async fn migrated_pool(url: &str) -> sqlx::AnyPool {
    DatabaseArgs::for_url(url)
        .open("runs", MIGRATIONS)
        .await
        .expect("migrated")
        .pool
}

/// A new thread of `user` in `org`, stored; its id.
pub async fn stored_thread(repo: &dyn RunsRepository, org: &str, user: &str) -> ThreadId {
    new_thread(repo, org, user).await.id
}

/// A new thread of `user` in `org`, stored.
pub async fn new_thread(repo: &dyn RunsRepository, org: &str, user: &str) -> Thread {
    let thread = Thread {
        id: ThreadId::new(),
        org_id: org.into(),
        user_id: user.into(),
        agent_id: AgentId::new(),
        title: "Data".into(),
        created_at: 1000,
        updated_at: 1000,
    };
    repo.insert_thread(&thread).await.expect("thread stored");
    thread
}
