//! The [`AuditLog`] suite: what the port promises, on `SqlAuditLog` (each
//! append its own transaction) and `BatchingAuditLog` (group commit over
//! it), each over SQLite and PostgreSQL.

use std::{sync::Arc, time::Duration};

use switchboard_mcp_service::{
    domain::audit::{
        AuditAction, AuditEvent, AuditLog, AuditOutcome, AuditQuery, AuditRecord,
        chain::{Verifier, event_hash},
    },
    outbound::storage::{
        audit::SqlAuditLog,
        audit_writer::{BatchShape, BatchingAuditLog},
        sql::MIGRATIONS,
    },
};
use switchboard_test_support::{DbKind, TestDb};

/// Which implementation a case runs on.
#[derive(Debug, Clone, Copy)]
enum Impl {
    Sql(DbKind),
    Batching(DbKind),
}

/// Two handles on one database, as two replicas hold them.
struct Logs {
    first: Arc<dyn AuditLog>,
    second: Arc<dyn AuditLog>,
    _db: TestDb,
}

async fn logs(of: Impl) -> Logs {
    let (Impl::Sql(kind) | Impl::Batching(kind)) = of;
    let db = TestDb::new(kind).await.expect("a test database");
    let mut handles = Vec::new();
    for _ in 0..2 {
        let pool = switchboard_db::open(&db.url, MIGRATIONS, 4)
            .await
            .expect("the database")
            .pool;
        let sql = Arc::new(SqlAuditLog::new(pool));
        let handle: Arc<dyn AuditLog> = match of {
            Impl::Sql(_) => sql,
            Impl::Batching(_) => Arc::new(BatchingAuditLog::start(
                sql,
                64,
                BatchShape {
                    max: 8,
                    wait: Duration::from_millis(5),
                },
            )),
        };
        handles.push(handle);
    }
    let second = handles.pop().expect("two handles");
    let first = handles.pop().expect("two handles");
    Logs {
        first,
        second,
        _db: db,
    }
}

fn record(org: &str, time_millis: i64, subject: &str, outcome: AuditOutcome) -> AuditRecord {
    AuditRecord {
        org_id: org.to_owned(),
        time_millis,
        action: AuditAction::ToolCall,
        outcome,
        subject: subject.to_owned(),
        roles: vec!["member".to_owned()],
        service: String::new(),
        integration_id: "integration-1".to_owned(),
        target: format!("tool-{time_millis}"),
        arguments_digest: String::new(),
        arguments_json: String::new(),
        reason: String::new(),
        rule: String::new(),
        duration_micros: Some(time_millis),
        trace_id: String::new(),
        approval_id: String::new(),
    }
}

/// Appends `records` through `log` in order, and waits until they are
/// stored.
async fn append(log: &dyn AuditLog, records: impl IntoIterator<Item = AuditRecord>) {
    for record in records {
        log.append(record).await.expect("appended");
    }
    log.flush().await.expect("flushed");
}

fn query(limit: usize) -> AuditQuery {
    AuditQuery {
        limit,
        ..AuditQuery::default()
    }
}

fn sequences(events: &[AuditEvent]) -> Vec<i64> {
    events.iter().map(|e| e.sequence).collect()
}

/// Checks `org`'s whole chain from its bounds, a page of two at a time.
async fn verify(log: &dyn AuditLog, org: &str) -> (i64, Option<i64>) {
    let bounds = log.bounds(org).await.expect("bounds");
    let mut verifier = Verifier::new(&bounds);
    loop {
        let page = log
            .chain_page(org, verifier.position(), 2)
            .await
            .expect("a page");
        if page.is_empty() || verifier.is_broken() {
            break;
        }
        page.iter().for_each(|event| verifier.check(event));
    }
    let verdict = verifier.finish(&bounds);
    (verdict.events_checked, verdict.broken.map(|(at, _)| at))
}

async fn appends_are_listed_newest_first_as_recorded(of: Impl) {
    let l = logs(of).await;
    let records: Vec<_> = (1..=3)
        .map(|t| record("org-a", t, "alice", AuditOutcome::Ok))
        .collect();
    append(&*l.first, records.clone()).await;
    let listed = l.first.list("org-a", &query(10)).await.expect("listed");
    assert_eq!(sequences(&listed), [3, 2, 1]);
    let stored: Vec<_> = listed.into_iter().rev().map(|e| e.record).collect();
    assert_eq!(stored, records);
}

async fn each_event_is_linked_to_the_one_before(of: Impl) {
    let l = logs(of).await;
    append(
        &*l.first,
        (1..=4).map(|t| record("org-a", t, "alice", AuditOutcome::Ok)),
    )
    .await;
    let chain = l.first.chain_page("org-a", 0, 10).await.expect("a page");
    assert_eq!(sequences(&chain), [1, 2, 3, 4]);
    let mut previous = String::new();
    for event in &chain {
        assert_eq!(event.previous_hash, previous);
        assert_eq!(
            event.hash,
            event_hash(event.sequence, &event.record, &previous)
        );
        previous.clone_from(&event.hash);
    }
    let bounds = l.first.bounds("org-a").await.expect("bounds");
    assert_eq!((bounds.head_sequence, bounds.head_hash), (4, previous));
    assert_eq!(verify(&*l.first, "org-a").await, (4, None));
}

async fn chain_pages_go_oldest_first_after_a_sequence(of: Impl) {
    let l = logs(of).await;
    append(
        &*l.first,
        (1..=5).map(|t| record("org-a", t, "alice", AuditOutcome::Ok)),
    )
    .await;
    let page = l.first.chain_page("org-a", 2, 2).await.expect("a page");
    assert_eq!(sequences(&page), [3, 4]);
    let last = l.first.chain_page("org-a", 4, 2).await.expect("a page");
    assert_eq!(sequences(&last), [5]);
}

async fn listings_page_and_filter(of: Impl) {
    let l = logs(of).await;
    append(
        &*l.first,
        [
            record("org-a", 10, "alice", AuditOutcome::Ok),
            record("org-a", 20, "bob", AuditOutcome::Denied),
            record("org-a", 30, "alice", AuditOutcome::Failed),
            record("org-a", 40, "alice", AuditOutcome::Ok),
        ],
    )
    .await;
    let first = l.first.list("org-a", &query(2)).await.expect("listed");
    assert_eq!(sequences(&first), [4, 3]);
    let next = AuditQuery {
        before_sequence: Some(3),
        ..query(2)
    };
    let second = l.first.list("org-a", &next).await.expect("listed");
    assert_eq!(sequences(&second), [2, 1]);
    let log = &*l.first;
    let narrowed = |q: AuditQuery| async move { log.list("org-a", &q).await.expect("listed") };
    let alice = AuditQuery {
        subject: Some("alice".into()),
        ..query(10)
    };
    assert_eq!(sequences(&narrowed(alice).await), [4, 3, 1]);
    let not_ok = AuditQuery {
        outcomes: vec![AuditOutcome::Denied, AuditOutcome::Failed],
        ..query(10)
    };
    assert_eq!(sequences(&narrowed(not_ok).await), [3, 2]);
    let window = AuditQuery {
        start_millis: Some(20),
        end_millis: Some(40),
        target: Some("tool-30".into()),
        ..query(10)
    };
    assert_eq!(sequences(&narrowed(window).await), [3]);
}

async fn the_chains_of_two_organizations_are_apart(of: Impl) {
    let l = logs(of).await;
    append(
        &*l.first,
        [
            record("org-a", 1, "alice", AuditOutcome::Ok),
            record("org-b", 2, "bob", AuditOutcome::Ok),
            record("org-a", 3, "alice", AuditOutcome::Ok),
        ],
    )
    .await;
    let b = l.first.list("org-b", &query(10)).await.expect("listed");
    assert_eq!(sequences(&b), [1]);
    assert_eq!(b[0].record.subject, "bob");
    assert_eq!(b[0].previous_hash, "");
    let a = l.first.chain_page("org-a", 0, 10).await.expect("a page");
    assert_eq!(sequences(&a), [1, 2]);
    assert_eq!(
        l.first.bounds("org-b").await.expect("bounds").head_sequence,
        1
    );
    assert_eq!(
        l.first.bounds("org-none").await.expect("bounds"),
        Default::default()
    );
    assert_eq!(verify(&*l.first, "org-a").await, (2, None));
}

async fn two_handles_appending_at_once_keep_one_chain(of: Impl) {
    let l = logs(of).await;
    let mut appenders = Vec::new();
    for i in 0..16 {
        let log = if i % 2 == 0 {
            l.first.clone()
        } else {
            l.second.clone()
        };
        appenders.push(tokio::spawn(async move {
            append(&*log, [record("org-a", i, "alice", AuditOutcome::Ok)]).await;
        }));
    }
    for appender in appenders {
        appender.await.expect("the appender ends");
    }
    assert_eq!(verify(&*l.second, "org-a").await, (16, None));
}

async fn a_purge_removes_the_oldest_and_the_rest_still_verifies(of: Impl) {
    let l = logs(of).await;
    append(
        &*l.first,
        [
            record("org-a", 10, "alice", AuditOutcome::Ok),
            record("org-b", 15, "bob", AuditOutcome::Ok),
            record("org-a", 20, "alice", AuditOutcome::Ok),
            record("org-a", 30, "alice", AuditOutcome::Ok),
            record("org-a", 40, "alice", AuditOutcome::Ok),
        ],
    )
    .await;
    let third = l.first.chain_page("org-a", 2, 1).await.expect("a page");
    assert_eq!(l.first.purge(35, 2).await.expect("purged"), 2);
    let mut removed = l.first.purge(35, 10).await.expect("purged");
    removed += l.first.purge(35, 10).await.expect("purged");
    assert_eq!(removed, 2, "the rest older than 35, of both chains");
    let bounds = l.first.bounds("org-a").await.expect("bounds");
    assert_eq!(
        (bounds.purged_through, bounds.purged_hash),
        (3, third[0].hash.clone())
    );
    let left = l.first.chain_page("org-a", 0, 10).await.expect("a page");
    assert_eq!(sequences(&left), [4]);
    assert_eq!(verify(&*l.first, "org-a").await, (1, None));
    assert!(
        l.first
            .list("org-b", &query(10))
            .await
            .expect("listed")
            .is_empty()
    );
}

/// One transaction of more events than one INSERT statement holds, for two
/// organizations interleaved: every event is stored once, in order, each
/// chain linked through the statements' seams and on into the next append.
async fn one_append_of_more_events_than_a_statement_holds_keeps_each_chain(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let pool = switchboard_db::open(&db.url, MIGRATIONS, 4)
        .await
        .expect("the database")
        .pool;
    let sql = SqlAuditLog::new(pool);
    let org = |i: i64| if i % 3 == 0 { "org-b" } else { "org-a" };
    let records: Vec<_> = (1..=200)
        .map(|i| record(org(i), i, "alice", AuditOutcome::Ok))
        .collect();
    sql.append_all(records.clone()).await.expect("appended");
    sql.append_all(vec![record("org-a", 201, "alice", AuditOutcome::Ok)])
        .await
        .expect("appended");
    assert_eq!(verify(&sql, "org-a").await, (135, None));
    assert_eq!(verify(&sql, "org-b").await, (66, None));
    let stored = sql.chain_page("org-a", 0, 500).await.expect("a page");
    assert_eq!(sequences(&stored), (1..=135).collect::<Vec<_>>());
    let expected: Vec<_> = records
        .into_iter()
        .filter(|r| r.org_id == "org-a")
        .chain([record("org-a", 201, "alice", AuditOutcome::Ok)])
        .collect();
    let stored: Vec<_> = stored.into_iter().map(|e| e.record).collect();
    assert_eq!(stored, expected);
}

/// A writer over a fresh database gathering for `wait`, and its store.
async fn writer(kind: DbKind, wait: Duration) -> (BatchingAuditLog, Arc<SqlAuditLog>, TestDb) {
    let db = TestDb::new(kind).await.expect("a test database");
    let pool = switchboard_db::open(&db.url, MIGRATIONS, 4)
        .await
        .expect("the database")
        .pool;
    let sql = Arc::new(SqlAuditLog::new(pool));
    let shape = BatchShape { max: 64, wait };
    (BatchingAuditLog::start(sql.clone(), 64, shape), sql, db)
}

/// A listing's flush is answered at once, whatever the batch wait.
async fn a_flush_does_not_wait_for_the_batch_wait(kind: DbKind) {
    let (log, sql, _db) = writer(kind, Duration::from_secs(30)).await;
    log.append(record("org-a", 1, "alice", AuditOutcome::Ok))
        .await
        .expect("appended");
    tokio::time::timeout(Duration::from_secs(5), log.flush())
        .await
        .expect("flushed long before the batch wait")
        .expect("flushed");
    assert_eq!(
        sequences(&sql.list("org-a", &query(10)).await.expect("listed")),
        [1]
    );
}

/// Without a flush, what was appended is written once the batch wait is
/// over, every event of a burst in the one chain.
async fn a_burst_is_written_within_the_batch_wait_without_a_flush(kind: DbKind) {
    let (log, sql, _db) = writer(kind, Duration::from_millis(200)).await;
    for i in 1..=20 {
        log.append(record("org-a", i, "alice", AuditOutcome::Ok))
            .await
            .expect("appended");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let listed = sql.list("org-a", &query(50)).await.expect("listed");
        if listed.len() == 20 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "written within the batch wait: {} of 20",
            listed.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(verify(sql.as_ref(), "org-a").await, (20, None));
}

switchboard_test_support::db_tests!(
    one_append_of_more_events_than_a_statement_holds_keeps_each_chain,
    a_flush_does_not_wait_for_the_batch_wait,
    a_burst_is_written_within_the_batch_wait_without_a_flush,
);

macro_rules! audit_log_suite {
    ($($case:ident),* $(,)?) => {
        audit_log_suite!(@on sql_sqlite, Sql, Sqlite; $($case),*);
        audit_log_suite!(@on sql_postgres, Sql, Postgres; $($case),*);
        audit_log_suite!(@on batching_sqlite, Batching, Sqlite; $($case),*);
        audit_log_suite!(@on batching_postgres, Batching, Postgres; $($case),*);
    };
    (@on $module:ident, $impl:ident, $kind:ident; $($case:ident),*) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Impl::$impl(super::DbKind::$kind)).await;
                }
            )*
        }
    };
}

audit_log_suite!(
    appends_are_listed_newest_first_as_recorded,
    each_event_is_linked_to_the_one_before,
    chain_pages_go_oldest_first_after_a_sequence,
    listings_page_and_filter,
    the_chains_of_two_organizations_are_apart,
    two_handles_appending_at_once_keep_one_chain,
    a_purge_removes_the_oldest_and_the_rest_still_verifies,
);
