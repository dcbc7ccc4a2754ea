//! Data sources: CSV import, durable storage and read-only SQL, on SQLite and
//! PostgreSQL.

use std::time::{Duration, Instant};

use switchboard_runs_service::{
    domain::{
        datasource::{
            Capacity, ColumnType, DataSource, DataSources, ImportError, ImportLimits, QueryError,
            QueryLimits, QueryResult,
        },
        entities::new_id,
        ids::{IntegrationId, ThreadId},
        ports::RunsRepository,
        texts,
    },
    outbound::{datasource::SqlDataSources, sql::SqlRunsRepository},
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

/// Small limits, so that the limit tests stay fast.
fn test_limits() -> (ImportLimits, QueryLimits) {
    (
        ImportLimits {
            max_bytes: 64 * 1024,
            max_rows: 100,
            max_columns: 8,
            max_field_bytes: 32,
            max_cells: 800,
        },
        QueryLimits {
            timeout: Duration::from_secs(2),
            memory_bytes: 64 * 1024 * 1024,
            max_rows: 5,
            max_cell_chars: 20,
            ..QueryLimits::default()
        },
    )
}

struct Fixture {
    _db: TestDb,
    pool: sqlx::AnyPool,
    repo: SqlRunsRepository,
    sources: SqlDataSources,
}

impl Fixture {
    async fn new(kind: DbKind) -> Self {
        let db = TestDb::new(kind).await.expect("a test database");
        let pool = crate::stores::migrated_pool(&db.url).await;
        let (import, query) = test_limits();
        Self {
            _db: db,
            repo: SqlRunsRepository::new(pool.clone()),
            // Room for the concurrent imports of one organization below.
            sources: SqlDataSources::new(pool.clone(), import, query).with_capacity(Capacity {
                concurrent_work: 8,
                concurrent_work_per_org: 4,
                ..Capacity::default()
            }),
            pool,
        }
    }

    /// A new stored thread's id.
    async fn thread(&self) -> ThreadId {
        crate::stores::stored_thread(&self.repo, "org-a", "alice").await
    }

    async fn import(&self, thread: ThreadId, name: &str, csv: &str) -> DataSource {
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
    }

    async fn import_error(&self, csv: &[u8]) -> ImportError {
        let thread = self.thread().await;
        match self
            .sources
            .import_csv(
                thread,
                "bad",
                "client",
                None,
                bytes::Bytes::copy_from_slice(csv),
            )
            .await
        {
            Err(error) => error,
            Ok(source) => panic!("expected an import error, got {source:?}"),
        }
    }

    async fn query(&self, thread: ThreadId, sql: &str) -> QueryResult {
        self.sources
            .query(thread, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }

    /// The rows of `sql`, each row's cells joined by commas.
    async fn rows(&self, thread: ThreadId, sql: &str) -> Vec<String> {
        self.query(thread, sql)
            .await
            .rows
            .into_iter()
            .map(|row| row.join(","))
            .collect()
    }
}

const SALES: &str = "\
Region,Product,Units,Price,Day,Shipped,At
north,apple,3,1.5,2024-01-01,true,2024-01-01 10:00:00
south,pear,5,2.25,2024-01-02,false,2024-01-02T11:30:00Z
north,pear,2,2.25,2024-01-02,TRUE,2024-01-02 12:00:00
east,apple,,1.5,2024-01-03,false,
";

fn types(source: &DataSource) -> Vec<(&str, ColumnType)> {
    source
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.column_type))
        .collect()
}

async fn imports_list_query_and_survive_a_restart(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let imported = fx.import(thread, "Sales.csv", SALES).await;
    assert_eq!(imported.table_name, "sales");
    assert_eq!(imported.row_count, 4);
    assert_eq!(imported.size_bytes, SALES.len() as i64);
    assert_eq!(
        types(&imported),
        [
            ("region", ColumnType::Text),
            ("product", ColumnType::Text),
            ("units", ColumnType::Integer),
            ("price", ColumnType::Float),
            ("day", ColumnType::Date),
            ("shipped", ColumnType::Boolean),
            ("at", ColumnType::Timestamp),
        ]
    );
    assert_eq!(
        imported.describe(),
        "sales (4 rows): region TEXT, product TEXT, units BIGINT, price DOUBLE, day DATE, \
         shipped BOOLEAN, at TIMESTAMP"
    );
    assert_eq!(
        fx.sources.list(thread).await.expect("listed"),
        std::slice::from_ref(&imported)
    );

    let sql = "SELECT region, SUM(units * price) AS revenue, COUNT(*) AS n FROM sales \
               GROUP BY region ORDER BY region";
    let result = fx.query(thread, sql).await;
    assert_eq!(result.columns, ["region", "revenue", "n"]);
    assert!(!result.truncated);
    assert_eq!(
        texts::query_table(&result),
        "region | revenue | n\neast | NULL | 1\nnorth | 9.0 | 2\nsouth | 11.25 | 1\n3 rows"
    );
    assert_eq!(
        fx.rows(
            thread,
            "SELECT day, at FROM sales WHERE shipped AND at >= '2024-01-02' ORDER BY at"
        )
        .await,
        ["2024-01-02,2024-01-02T12:00:00"]
    );

    // A new adapter over the same database: the table was stored, not cached.
    let (import, query) = test_limits();
    let restarted = SqlDataSources::new(fx.pool.clone(), import, query);
    assert_eq!(restarted.list(thread).await.expect("listed"), [imported]);
    assert_eq!(
        texts::query_table(&restarted.query(thread, sql).await.expect("queried")),
        texts::query_table(&result)
    );
}

async fn tables_are_decoded_again_when_the_cache_holds_nothing(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    fx.import(thread, "sales", SALES).await;
    let (import, query) = test_limits();
    let uncached = SqlDataSources::new(fx.pool.clone(), import, query).with_cache_bytes(0);
    for _ in 0..2 {
        assert_eq!(
            uncached
                .query(thread, "SELECT COUNT(*) FROM sales")
                .await
                .expect("queried")
                .rows,
            [["4"]]
        );
    }
}

async fn table_names_are_unique_per_thread_and_listed_oldest_first(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let (a, b) = (fx.thread().await, fx.thread().await);
    let first = fx.import(a, "sales.csv", "x\n1\n").await;
    let second = fx.import(a, "Sales", "x\n2\n").await;
    let third = fx.import(a, "dataset://q3/orders", "x\n3\n").await;
    let elsewhere = fx.import(b, "sales.csv", "x\n4\n").await;
    assert_eq!(
        [&first, &second, &third, &elsewhere].map(|s| s.table_name.as_str()),
        ["sales", "sales_2", "dataset_q3_orders", "sales"]
    );
    let listed = fx.sources.list(a).await.expect("listed");
    assert_eq!(listed, [first, second, third]);
    assert_eq!(
        fx.rows(
            a,
            "SELECT x FROM sales UNION ALL SELECT x FROM sales_2 ORDER BY x"
        )
        .await,
        ["1", "2"]
    );
    assert_eq!(fx.rows(b, "SELECT x FROM sales").await, ["4"]);
}

async fn concurrent_imports_of_one_name_get_distinct_tables(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let imports = (0..4).map(|i| {
        let csv = format!("n\n{i}\n");
        let (sources, thread) = (&fx.sources, thread);
        async move {
            sources
                .import_csv(
                    thread,
                    "same",
                    "client",
                    None,
                    bytes::Bytes::copy_from_slice(csv.as_bytes()),
                )
                .await
                .expect("imported")
                .table_name
        }
    });
    let mut names = futures::future::join_all(imports).await;
    names.sort();
    assert_eq!(names, ["same", "same_2", "same_3", "same_4"]);
}

async fn deleting_a_thread_deletes_its_data_sources(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let integration = IntegrationId::from(uuid::Uuid::now_v7());
    let source = fx
        .sources
        .import_csv(
            thread,
            "sales",
            "dataset://sales",
            Some(integration),
            bytes::Bytes::copy_from_slice(SALES.as_bytes()),
        )
        .await
        .expect("imported");
    assert_eq!(source.origin, "dataset://sales");
    assert_eq!(source.integration_id, Some(integration));
    assert_eq!(
        fx.sources.list(thread).await.expect("listed"),
        [source],
        "the data source reads back with its ids"
    );
    assert!(
        fx.repo
            .delete_thread("org-a", "alice", thread)
            .await
            .expect("deleted")
    );
    assert!(fx.sources.list(thread).await.expect("listed").is_empty());
    assert!(matches!(
        fx.sources.query(thread, "SELECT * FROM sales").await,
        Err(QueryError::Engine(e)) if e.contains("not found")
    ));
}

async fn csv_edge_cases_parse_as_documented(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let csv = "\u{feff}Name,name, ,\"Note, quoted\",name\"; DROP TABLE x; --\n\
               \"Smith, J\",1,x,\"two\nlines\",a\n\
               Doe,2\n\
               Roe,3,y,z,b,,\n";
    let source = fx.import(thread, "edge cases", csv).await;
    assert_eq!(source.table_name, "edge_cases");
    assert_eq!(
        types(&source),
        [
            ("name", ColumnType::Text),
            ("name_2", ColumnType::Integer),
            ("column_3", ColumnType::Text),
            ("note_quoted", ColumnType::Text),
            ("name_drop_table_x", ColumnType::Text),
        ]
    );
    assert_eq!(source.row_count, 3);
    let result = fx
        .query(thread, "SELECT * FROM edge_cases ORDER BY name_2")
        .await;
    assert_eq!(
        result.rows,
        [
            ["Smith, J", "1", "x", "two\nlines", "a"],
            ["Doe", "2", "NULL", "NULL", "NULL"],
            ["Roe", "3", "y", "z", "b"],
        ]
    );
    assert!(texts::query_table(&result).contains("Smith, J | 1 | x | two\\nlines | a\n"));

    // Leading zeros keep codes as text; large cells are cut for the model.
    let codes = fx
        .import(
            thread,
            "codes",
            "zip,blurb\n00501,abcdefghijklmnopqrstuvwxyz\n10001,short\n",
        )
        .await;
    assert_eq!(codes.columns[0].column_type, ColumnType::Text);
    assert_eq!(
        fx.rows(thread, "SELECT zip, blurb FROM codes ORDER BY zip")
            .await,
        ["00501,abcdefghijklmnopqrst…", "10001,short"]
    );

    // Only a header: a table with no rows.
    let empty = fx.import(thread, "empty", "a,b\n").await;
    assert_eq!(empty.row_count, 0);
    assert_eq!(
        texts::query_table(&fx.query(thread, "SELECT * FROM empty").await),
        "a | b\n0 rows"
    );
}

async fn bad_csv_is_refused_with_the_limit_or_line_named(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "invalid UTF-8",
            b"a,b\n1,2\n3,\xff\xfe\n".to_vec(),
            "line 3 is not valid UTF-8 text",
        ),
        (
            "over the size limit",
            format!("a\n{}", "1\n".repeat(40_000)).into_bytes(),
            "the CSV is 80002 bytes; the limit is 65536 bytes",
        ),
        (
            "too many columns",
            b"a,b,c,d,e,f,g,h,i\n1,2,3,4,5,6,7,8,9\n".to_vec(),
            "the CSV has 9 columns; the limit is 8 columns",
        ),
        (
            "too many rows",
            format!("a\n{}", "1\n".repeat(101)).into_bytes(),
            "the CSV has 101 data rows; the limit is 100 rows",
        ),
        (
            "a field over the limit",
            format!("a,b\n1,2\n3,{}\n", "x".repeat(33)).into_bytes(),
            "line 3, column 2: a field is 33 bytes; the limit is 32 bytes per field",
        ),
        (
            "extra fields",
            b"a,b\n1,2\n3,4,5\n".to_vec(),
            "line 3 has 3 fields but the header names 2 columns",
        ),
        ("empty", b"\xef\xbb\xbf \n".to_vec(), "the CSV is empty"),
        (
            "a blank header",
            b" , \n1,2\n".to_vec(),
            "the first line must name the columns",
        ),
    ];
    for (case, csv, expected) in cases {
        let error = fx.import_error(&csv).await;
        assert!(
            error.to_string().starts_with(expected),
            "{case}: {error} does not start with {expected:?}"
        );
        assert!(!matches!(error, ImportError::Storage(_)), "{case}");
    }
}

async fn an_import_into_an_unknown_thread_fails_in_storage(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let error = fx
        .sources
        .import_csv(
            ThreadId::new(),
            "sales",
            "client",
            None,
            bytes::Bytes::copy_from_slice(SALES.as_bytes()),
        )
        .await
        .expect_err("no such thread");
    assert!(matches!(error, ImportError::Storage(_)), "{error:?}");
}

async fn only_single_read_only_queries_run_and_the_table_stays_intact(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let other = fx.thread().await;
    fx.import(thread, "sales", SALES).await;
    fx.import(other, "secrets", "secret\nhunter2\n").await;
    let before = fx.sources.list(thread).await.expect("listed");
    let copy_target = std::env::temp_dir().join(format!("sb-copy-{}.csv", new_id()));

    let refused = [
        "CREATE TABLE t (a INT)".to_owned(),
        "CREATE TABLE t AS SELECT * FROM sales".to_owned(),
        "CREATE VIEW v AS SELECT * FROM sales".to_owned(),
        "DROP TABLE sales".to_owned(),
        "INSERT INTO sales (region) VALUES ('west')".to_owned(),
        "UPDATE sales SET units = 0".to_owned(),
        "DELETE FROM sales".to_owned(),
        format!("COPY (SELECT 1) TO '{}'", copy_target.display()),
        format!("COPY sales TO '{}'", copy_target.display()),
        "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/passwd'".to_owned(),
        "SET datafusion.execution.batch_size = 1".to_owned(),
        "SELECT * INTO t FROM sales".to_owned(),
        "EXPLAIN ANALYZE SELECT * FROM sales".to_owned(),
        "SELECT 1; SELECT 2".to_owned(),
        "SELECT 1; DROP TABLE sales".to_owned(),
        String::new(),
    ];
    for sql in &refused {
        match fx.sources.query(thread, sql).await {
            Err(QueryError::Refused(why)) => assert!(!texts::query_refusal(&why).is_empty()),
            other => panic!("{sql}: expected a refusal, got {other:?}"),
        }
    }

    // Files and URLs are not tables; another thread's tables are not visible.
    for sql in [
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM 'file:///etc/passwd'",
        "SELECT * FROM secrets",
        "SELECT * FROM datafusion.public.secrets",
        "SELECT * FROM information_schema.tables",
    ] {
        match fx.sources.query(thread, sql).await {
            Err(QueryError::Engine(message)) => {
                assert!(message.contains("not found"), "{sql}: {message}");
            }
            other => panic!("{sql}: expected an engine error, got {other:?}"),
        }
    }

    assert!(!copy_target.exists(), "COPY wrote a file");
    assert_eq!(fx.sources.list(thread).await.expect("listed"), before);
    assert_eq!(
        fx.rows(thread, "SELECT COUNT(*), SUM(units) FROM sales")
            .await,
        ["4,10"]
    );
    assert_eq!(
        fx.rows(other, "SELECT secret FROM secrets").await,
        ["hunter2"]
    );
}

async fn invalid_sql_returns_the_engines_words(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    fx.import(thread, "sales", SALES).await;
    for (sql, expected) in [
        ("SELEC region FROM sales", "SELEC"),
        ("SELECT nope FROM sales", "nope"),
        ("SELECT region FROM sales GROUP BY", "Expected"),
        ("SELECT units + region FROM sales", "Cannot coerce"),
    ] {
        match fx.sources.query(thread, sql).await {
            Err(QueryError::Engine(message)) => {
                assert!(message.contains(expected), "{sql}: {message}");
            }
            other => panic!("{sql}: expected an engine error, got {other:?}"),
        }
    }
}

async fn huge_results_are_cut_without_being_materialised(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    // Ten billion rows: materialised, they would not fit in memory or in
    // the query's time limit, so a cut answer shows they were not.
    let result = fx
        .query(thread, "SELECT * FROM generate_series(1, 10000000000)")
        .await;
    assert!(result.truncated);
    assert_eq!(result.rows.len(), 5);
    assert!(texts::query_table(&result).ends_with("showing first 5 rows; the result was cut"));

    // A cross join of ten million rows, cut the same way.
    fx.import(thread, "k", &format!("v\n{}", "1\n".repeat(100)))
        .await;
    let crossed = fx
        .query(
            thread,
            "SELECT * FROM k a, k b, k c, generate_series(1, 10) g",
        )
        .await;
    assert!(crossed.truncated);
    assert_eq!(crossed.rows.len(), 5);
}

async fn a_query_running_past_the_time_limit_is_stopped(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let start = Instant::now();
    let result = fx
        .sources
        .query(
            thread,
            "SELECT COUNT(*) FROM generate_series(1, 1000000) a \
             CROSS JOIN generate_series(1, 1000000) b",
        )
        .await;
    let elapsed = start.elapsed();
    assert!(
        matches!(result, Err(QueryError::Timeout(limit)) if limit == Duration::from_secs(2)),
        "{result:?}"
    );
    // Unstopped, the cross join would run for hours; the bound leaves room
    // for a busy machine.
    assert!(
        elapsed < Duration::from_secs(15),
        "stopped after {elapsed:?}"
    );
    // The engine is free again.
    assert_eq!(fx.rows(thread, "SELECT 1 + 1").await, ["2"]);
}

async fn a_query_over_the_memory_limit_fails_with_the_engines_words(kind: DbKind) {
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let (import, query) = test_limits();
    let small = SqlDataSources::new(
        fx.pool.clone(),
        import,
        QueryLimits {
            memory_bytes: 1024 * 1024,
            ..query
        },
    );
    let result = small
        .query(
            thread,
            // Grouped by an unordered key: groups of the ordered series
            // itself stream in constant memory on one thread.
            "SELECT value % 150000 AS v, COUNT(*) FROM generate_series(1, 300000) GROUP BY 1 \
             ORDER BY 2 DESC, 1",
        )
        .await;
    match result {
        Err(QueryError::Engine(message)) => {
            assert!(message.contains("Resources exhausted"), "{message}");
        }
        other => panic!("expected an engine error, got {other:?}"),
    }
}

async fn a_long_query_leaves_the_callers_runtime_free(kind: DbKind) {
    // `#[tokio::test]` runs on one thread: a query holding it would stop the
    // ticker below.
    let fx = Fixture::new(kind).await;
    let thread = fx.thread().await;
    let ticker = async {
        let mut ticks = 0u32;
        let mut worst = Duration::ZERO;
        let end = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < end {
            let before = Instant::now();
            tokio::time::sleep(Duration::from_millis(10)).await;
            worst = worst.max(before.elapsed());
            ticks += 1;
        }
        (ticks, worst)
    };
    let query = fx.sources.query(
        thread,
        "SELECT COUNT(*) FROM generate_series(1, 1000000) a \
         CROSS JOIN generate_series(1, 1000000) b",
    );
    let (result, (ticks, worst)) = tokio::join!(query, ticker);
    assert!(matches!(result, Err(QueryError::Timeout(_))), "{result:?}");
    // A runtime held by the query would tick once, after the query's 2 s
    // limit; the bounds leave room for a busy machine.
    assert!(ticks > 10, "only {ticks} ticks");
    assert!(worst < Duration::from_secs(1), "a tick waited {worst:?}");
}

db_tests!(
    imports_list_query_and_survive_a_restart,
    tables_are_decoded_again_when_the_cache_holds_nothing,
    table_names_are_unique_per_thread_and_listed_oldest_first,
    concurrent_imports_of_one_name_get_distinct_tables,
    deleting_a_thread_deletes_its_data_sources,
    csv_edge_cases_parse_as_documented,
    bad_csv_is_refused_with_the_limit_or_line_named,
    an_import_into_an_unknown_thread_fails_in_storage,
    only_single_read_only_queries_run_and_the_table_stays_intact,
    invalid_sql_returns_the_engines_words,
    huge_results_are_cut_without_being_materialised,
    a_query_running_past_the_time_limit_is_stopped,
    a_query_over_the_memory_limit_fails_with_the_engines_words,
    a_long_query_leaves_the_callers_runtime_free,
);
