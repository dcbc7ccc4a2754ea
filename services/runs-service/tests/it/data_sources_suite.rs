//! The [`DataSources`] suite: what the port promises, on `SqlDataSources`
//! over SQLite and PostgreSQL, and what of it holds for a thread with no
//! data sources on `fakes::NoSources`, which the run loop's unit tests use.

use std::time::Duration;

use switchboard_runs_service::{
    domain::{
        datasource::{DataSources, ImportError, ImportLimits, QueryError, QueryLimits},
        ids::{IntegrationId, ThreadId},
        ports::RunsRepository,
    },
    fakes::{MemoryRepository, NoSources},
    outbound::{datasource::SqlDataSources, sql::SqlRunsRepository},
};
use switchboard_test_support::{DbKind, Store, TestDb, store_tests};

use crate::stores::{migrated_pool, stored_thread};

const IMPORT: ImportLimits = ImportLimits {
    max_bytes: 4 * 1024,
    max_rows: 100,
    max_columns: 8,
    max_field_bytes: 64,
    max_cells: 800,
};

fn query_limits() -> QueryLimits {
    QueryLimits {
        timeout: Duration::from_secs(5),
        max_rows: 3,
        ..QueryLimits::default()
    }
}

const SALES: &str = "Region,Units\nnorth,3\nsouth,5\neast,2\nwest,7\n";

/// The data sources of a case, the threads they belong to, and what they
/// live in.
struct Sources {
    sources: Box<dyn DataSources>,
    repo: Box<dyn RunsRepository>,
    /// The pool of the database, for a second replica.
    pool: Option<sqlx::AnyPool>,
    _db: Option<TestDb>,
}

async fn sources(store: Store) -> Sources {
    match store {
        Store::Db(kind) => {
            let db = TestDb::new(kind).await.expect("a test database");
            let pool = migrated_pool(&db.url).await;
            Sources {
                sources: Box::new(SqlDataSources::new(pool.clone(), IMPORT, query_limits())),
                repo: Box::new(SqlRunsRepository::new(pool.clone())),
                pool: Some(pool),
                _db: Some(db),
            }
        }
        Store::Memory => Sources {
            sources: Box::new(NoSources),
            repo: Box::new(MemoryRepository::default()),
            pool: None,
            _db: None,
        },
    }
}

impl Sources {
    async fn thread(&self, org: &str) -> ThreadId {
        stored_thread(&*self.repo, org, "alice").await
    }

    async fn import(&self, thread: ThreadId, name: &str, csv: &str) -> String {
        self.sources
            .import_csv(
                thread,
                name,
                "client",
                None,
                bytes::Bytes::copy_from_slice(csv.as_bytes()),
            )
            .await
            .expect("imported")
            .table_name
    }

    async fn rows(&self, thread: ThreadId, sql: &str) -> Vec<String> {
        self.sources
            .query(thread, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
            .rows
            .into_iter()
            .map(|row| row.join(","))
            .collect()
    }
}

async fn a_thread_without_imports_lists_none(store: Store) {
    let s = sources(store).await;
    let thread = s.thread("org-a").await;
    if matches!(store, Store::Db(_)) {
        // Another thread's, of the same organization.
        let other = s.thread("org-a").await;
        s.import(other, "sales", SALES).await;
    }
    assert!(s.sources.list(thread).await.expect("listed").is_empty());
}

async fn a_query_of_a_table_the_thread_lacks_fails_with_the_engines_words(store: Store) {
    let s = sources(store).await;
    let thread = s.thread("org-a").await;
    match s.sources.query(thread, "SELECT * FROM sales").await {
        Err(QueryError::Engine(message)) => {
            assert!(message.contains("not found"), "{message}");
        }
        other => panic!("expected the engine's words, got {other:?}"),
    }
}

async fn imports_are_listed_oldest_first_under_safe_unique_names(kind: DbKind) {
    let s = sources(Store::Db(kind)).await;
    let thread = s.thread("org-a").await;
    let integration = IntegrationId::from(uuid::Uuid::now_v7());
    let first = s
        .sources
        .import_csv(
            thread,
            "Sales Q1!",
            "mcp://x/sales",
            Some(integration),
            bytes::Bytes::copy_from_slice(SALES.as_bytes()),
        )
        .await
        .expect("imported");
    let second = s.import(thread, "Sales Q1!", SALES).await;
    assert_eq!(first.table_name, "sales_q1");
    assert_ne!(second, first.table_name);
    assert_eq!(first.row_count, 4);
    let listed = s.sources.list(thread).await.expect("listed");
    let names: Vec<_> = listed.iter().map(|d| d.table_name.as_str()).collect();
    assert_eq!(names, [first.table_name.as_str(), second.as_str()]);
    assert_eq!(listed[0], first);
    assert_eq!(listed[0].origin, "mcp://x/sales");
    assert_eq!(listed[0].integration_id, Some(integration));
}

async fn a_query_reads_its_threads_tables_and_no_other_threads(kind: DbKind) {
    let s = sources(Store::Db(kind)).await;
    let thread = s.thread("org-a").await;
    let other = s.thread("org-b").await;
    s.import(thread, "sales", SALES).await;
    s.import(other, "secrets", "secret\nhunter2\n").await;
    assert_eq!(s.rows(thread, "SELECT SUM(units) FROM sales").await, ["17"]);
    assert!(s.sources.list(other).await.expect("listed").len() == 1);
    for (sql, at) in [
        ("SELECT * FROM secrets", thread),
        ("SELECT * FROM sales", other),
    ] {
        match s.sources.query(at, sql).await {
            Err(QueryError::Engine(message)) => assert!(message.contains("not found"), "{message}"),
            other => panic!("{sql}: expected the engine's words, got {other:?}"),
        }
    }
}

async fn a_statement_other_than_one_read_only_query_is_refused(kind: DbKind) {
    let s = sources(Store::Db(kind)).await;
    let thread = s.thread("org-a").await;
    s.import(thread, "sales", SALES).await;
    for sql in [
        "DROP TABLE sales",
        "DELETE FROM sales",
        "SELECT 1; SELECT 2",
    ] {
        match s.sources.query(thread, sql).await {
            Err(QueryError::Refused(_)) => {}
            other => panic!("{sql}: expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(s.rows(thread, "SELECT COUNT(*) FROM sales").await, ["4"]);
}

async fn an_import_past_the_size_limit_is_refused_with_both_sizes(kind: DbKind) {
    let s = sources(Store::Db(kind)).await;
    let thread = s.thread("org-a").await;
    let csv = format!("a\n{}", "1\n".repeat(IMPORT.max_bytes));
    match s
        .sources
        .import_csv(
            thread,
            "big",
            "client",
            None,
            bytes::Bytes::copy_from_slice(csv.as_bytes()),
        )
        .await
    {
        Err(ImportError::TooLarge { limit, actual }) => {
            assert_eq!((limit, actual), (IMPORT.max_bytes, csv.len()));
        }
        other => panic!("expected too large, got {other:?}"),
    }
    assert!(s.sources.list(thread).await.expect("listed").is_empty());
}

async fn a_result_past_the_row_limit_is_cut_and_says_so(kind: DbKind) {
    let s = sources(Store::Db(kind)).await;
    let thread = s.thread("org-a").await;
    s.import(thread, "sales", SALES).await;
    let cut = s
        .sources
        .query(thread, "SELECT region FROM sales ORDER BY units")
        .await
        .expect("a result");
    assert_eq!(cut.columns, ["region"]);
    assert_eq!(cut.rows.len(), query_limits().max_rows);
    assert!(cut.truncated);
    let whole = s
        .sources
        .query(thread, "SELECT region FROM sales WHERE units > 4")
        .await
        .expect("a result");
    assert!(!whole.truncated && whole.rows.len() == 2, "{whole:?}");
}

async fn an_import_is_served_by_another_replica_on_the_same_database(kind: DbKind) {
    let s = sources(Store::Db(kind)).await;
    let thread = s.thread("org-a").await;
    s.import(thread, "sales", SALES).await;
    let pool = s.pool.clone().expect("a database");
    let replica = SqlDataSources::new(pool, IMPORT, query_limits());
    assert_eq!(
        replica.list(thread).await.expect("listed"),
        s.sources.list(thread).await.expect("listed")
    );
    let result = replica
        .query(thread, "SELECT MAX(units) FROM sales")
        .await
        .expect("a result");
    assert_eq!(result.rows, [["7"]]);
}

store_tests!(
    every_store: [
        a_thread_without_imports_lists_none,
        a_query_of_a_table_the_thread_lacks_fails_with_the_engines_words,
    ],
    // `NoSources` stands for a thread with no data sources: it imports
    // none, so what needs a table is the databases' alone.
    databases_only: [
        imports_are_listed_oldest_first_under_safe_unique_names,
        a_query_reads_its_threads_tables_and_no_other_threads,
        a_statement_other_than_one_read_only_query_is_refused,
        an_import_past_the_size_limit_is_refused_with_both_sizes,
        a_result_past_the_row_limit_is_cut_and_says_so,
        an_import_is_served_by_another_replica_on_the_same_database,
    ],
);
