//! Hostile input to data sources: SQL a model writes after a prompt
//! injection, CSV files built to amplify, and one organization trying to take
//! every slot or byte. Each test names the behaviour that protects the
//! process and the other organizations.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use switchboard_runs_service::{
    domain::{
        datasource::{Capacity, DataSources, ImportError, ImportLimits, QueryError, QueryLimits},
        ids::ThreadId,
        ports::RunsRepository,
        texts,
        tools::{SourceQuery, ToolArguments, ToolOutcome},
    },
    outbound::{datasource::SqlDataSources, sql::SqlRunsRepository},
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

/// A table with enough rows that a four-way cross join has millions.
pub(crate) fn numbers_csv(rows: usize) -> String {
    let mut csv = String::from("n,name\n");
    for i in 0..rows {
        csv.push_str(&format!("{i},name {i}\n"));
    }
    csv
}

fn query_limits() -> QueryLimits {
    QueryLimits {
        timeout: Duration::from_secs(5),
        memory_bytes: 64 * 1024 * 1024,
        ..QueryLimits::default()
    }
}

pub(crate) struct Fixture {
    _db: TestDb,
    pool: sqlx::AnyPool,
    repo: SqlRunsRepository,
    pub(crate) sources: Arc<SqlDataSources>,
}

impl Fixture {
    pub(crate) async fn new(
        kind: DbKind,
        import: ImportLimits,
        query: QueryLimits,
        capacity: Capacity,
    ) -> Self {
        let db = TestDb::new(kind).await.expect("a test database");
        let pool = crate::stores::migrated_pool(&db.url).await;
        Self {
            _db: db,
            repo: SqlRunsRepository::new(pool.clone()),
            sources: Arc::new(
                SqlDataSources::new(pool.clone(), import, query).with_capacity(capacity),
            ),
            pool,
        }
    }

    async fn with_defaults(kind: DbKind) -> Self {
        Self::new(
            kind,
            ImportLimits::default(),
            query_limits(),
            Capacity::default(),
        )
        .await
    }

    /// A new stored thread of `org`.
    pub(crate) async fn thread(&self, org: &str) -> ThreadId {
        crate::stores::stored_thread(&self.repo, org, "mallory").await
    }

    pub(crate) async fn import(&self, thread: ThreadId, name: &str, csv: &str) {
        self.sources
            .import_csv(
                thread,
                name,
                "client",
                None,
                bytes::Bytes::copy_from_slice(csv.as_bytes()),
            )
            .await
            .unwrap_or_else(|e| panic!("{name} imported: {e}"));
    }

    /// The model-facing `source_query` tool over these data sources.
    pub(crate) fn source_query(&self) -> SourceQuery {
        let sources: Arc<dyn DataSources> = self.sources.clone();
        SourceQuery::new(sources)
    }
}

pub(crate) fn arguments(sql: &str) -> ToolArguments {
    ToolArguments::parse(&json!({ "query": sql }).to_string()).expect("a JSON object")
}

/// SQL that builds values, rows or plans far past what a query may use.
fn hostile_corpus() -> Vec<String> {
    let mut corpus: Vec<String> = [
        // The query that aborted the process, and its variants per string type.
        "SELECT length(repeat(arrow_cast('x', 'LargeUtf8'), 1000000000000)) FROM t",
        "SELECT length(repeat(arrow_cast('x', 'Utf8View'), 1000000000000)) FROM t",
        "SELECT length(repeat('x', 1000000000000))",
        "SELECT length(repeat(name, 2147483647)) FROM t",
        "SELECT length(repeat(arrow_cast(name, 'LargeUtf8'), n * 100000000)) FROM t",
        "SELECT length(repeat(repeat('ab', 1000), 1000)) FROM t",
        "SELECT length(repeat('x', 500000)) FROM t a, t b",
        // Padding.
        "SELECT length(lpad('x', 1000000000000))",
        "SELECT length(rpad(name, 2000000000, 'é')) FROM t",
        "SELECT length(lpad(arrow_cast(name, 'Utf8View'), 1000000000, 'ab')) FROM t",
        "SELECT length(rpad(arrow_cast('x', 'LargeUtf8'), 900000)) FROM t a, t b",
        // Concatenation over cross joins.
        "SELECT length(concat(repeat(a.name, 60000), repeat(b.name, 60000))) FROM t a, t b, t c",
        "SELECT length(repeat(a.name, 60000) || repeat(b.name, 60000) || repeat(c.name, 60000)) FROM t a, t b, t c",
        "SELECT length(concat_ws(repeat(',', 1000000), name, name, name)) FROM t",
        "SELECT length(arrow_cast(repeat('x', 1000000), 'Utf8View') || arrow_cast(repeat('y', 1000000), 'Utf8View'))",
        "SELECT length(arrow_cast(repeat('x', 1000000), 'LargeUtf8') || 'y')",
        // Aggregates over cross joins.
        "SELECT length(string_agg(repeat(a.name, 10000), ',')) FROM t a, t b, t c",
        "SELECT length(string_agg(a.name || b.name || c.name || d.name, ',')) FROM t a, t b, t c, t d",
        "SELECT cardinality(array_agg(repeat(a.name, 1000))) FROM t a, t b, t c",
        "SELECT count(*) FROM (SELECT array_agg(a.name) AS x FROM t a, t b, t c, t d GROUP BY a.n)",
        // Other growing functions.
        "SELECT length(replace(repeat('a', 100000), 'a', repeat('b', 100000)))",
        "SELECT length(replace(name, '', repeat('x', 100000))) FROM t",
        "SELECT length(regexp_replace(repeat('a', 100000), '', repeat('x', 1000), 'g'))",
        "SELECT length(regexp_replace(repeat('a', 100000), '(a)', '\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1\\1', 'g')) FROM t",
        "SELECT length(overlay(repeat('x', 1000000) placing repeat('y', 1000000) from 1))",
        "SELECT arrow_cast(NULL, 'FixedSizeBinary(2000000000)') FROM t",
        "SELECT arrow_cast(NULL, 'FixedSizeList(1000000000, Int64)') FROM t",
        // Recursion.
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) FROM r",
        "SELECT * FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r) x",
        "SELECT (WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT concat(s, s) FROM r) SELECT max(length(s)) FROM r)",
        // Row counts.
        "SELECT count(*) FROM generate_series(1, 1000000000000)",
        "SELECT count(*) FROM range(1000000000000)",
        "SELECT sum(a.n * b.n) FROM t a, t b, t c, t d, t e",
        "SELECT count(*) OVER (ORDER BY a.n) FROM t a, t b, t c, t d ORDER BY 1 DESC",
        "SELECT a.n FROM t a, t b, t c, t d ORDER BY a.name || b.name DESC",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let encodes = 20;
    corpus.push(format!(
        "SELECT length({}repeat('x', 1000){})",
        "encode(".repeat(encodes),
        ", 'hex')".repeat(encodes)
    ));
    corpus.push(format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000)));
    corpus.push(format!("SELECT {}1", "1+".repeat(20000)));
    // At the operator and token limits, planning still ends in time.
    corpus.push(format!("SELECT {}1", "1+".repeat(127)));
    corpus.push(format!(
        "SELECT count(*) FROM t WHERE {}",
        vec!["n = 1"; 60].join(" OR ")
    ));
    corpus.push(format!("SELECT length({}'x')", "'x' || ".repeat(127)));
    corpus.push(format!(
        "SELECT count(*) FROM t WHERE n IN ({})",
        (0..1900)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    ));
    corpus.push(format!(
        "SELECT count(*) FROM t WHERE {}",
        vec!["n = 1"; 5000].join(" OR ")
    ));
    corpus.push(format!(
        "SELECT count(*) FROM t WHERE n IN ({})",
        (0..12000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    ));
    corpus.push(format!(
        "SELECT {}",
        (0..6000)
            .map(|i| format!("n{i}"))
            .collect::<Vec<_>>()
            .join(",")
    ));
    corpus
}

async fn no_source_query_ends_the_process(kind: DbKind) {
    let fx = Fixture::with_defaults(kind).await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "t", &numbers_csv(40)).await;
    let query = fx.source_query();
    for sql in hostile_corpus() {
        let ToolOutcome { text, is_error, .. } = query.run(thread, &arguments(&sql)).await;
        let shown: String = sql.chars().take(120).collect();
        // Huge IN lists and chains may legitimately answer; everything that
        // would build past the limits must be refused or fail.
        if !is_error {
            assert!(
                text.len() <= QueryLimits::default().max_result_bytes + 100,
                "{shown}: {} bytes",
                text.len()
            );
            continue;
        }
        assert!(
            text.starts_with("Query refused: ") || text.starts_with("Query failed: "),
            "{shown}: {text}"
        );
    }
    // The process, and the thread's table, are still there.
    let ToolOutcome { text, is_error, .. } = query
        .run(thread, &arguments("SELECT count(*) AS rows FROM t"))
        .await;
    assert!(!is_error, "{text}");
    assert!(text.starts_with("rows\n40\n"), "{text}");
}

async fn growing_functions_are_refused_with_the_limit_named(kind: DbKind) {
    let fx = Fixture::with_defaults(kind).await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "t", &numbers_csv(4)).await;
    let query = fx.source_query();
    for sql in [
        "SELECT length(repeat(arrow_cast('x', 'LargeUtf8'), 1000000000000)) FROM t",
        "SELECT length(lpad('x', 1000000000000))",
        "SELECT length(repeat(name, 300000) || repeat(name, 300000)) FROM t",
    ] {
        let ToolOutcome { text, is_error, .. } = query.run(thread, &arguments(sql)).await;
        assert!(is_error, "{sql}: {text}");
        assert!(
            text.starts_with("Query failed: ") && text.contains("bytes per value"),
            "{sql}: {text}"
        );
    }
    // Within the limit, the same functions work.
    let ToolOutcome { text, is_error, .. } = query
        .run(
            thread,
            &arguments("SELECT length(repeat('ab', 1000) || lpad('x', 10)) AS n"),
        )
        .await;
    assert!(!is_error, "{text}");
    assert!(text.starts_with("n\n2010\n"), "{text}");
}

async fn recursive_queries_are_refused(kind: DbKind) {
    let fx = Fixture::with_defaults(kind).await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "t", &numbers_csv(4)).await;
    let error = fx
        .sources
        .query(
            thread,
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r",
        )
        .await
        .expect_err("a recursive query");
    assert!(
        matches!(&error, QueryError::Refused(why) if texts::query_refusal(why).contains("recursive")),
        "{error:?}"
    );
}

async fn a_wide_result_is_cut_at_the_byte_limit(kind: DbKind) {
    let query = QueryLimits {
        max_result_bytes: 2000,
        ..query_limits()
    };
    let fx = Fixture::new(kind, ImportLimits::default(), query, Capacity::default()).await;
    let thread = fx.thread("org-a").await;
    let mut csv = (0..20)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    csv.push('\n');
    for _ in 0..10 {
        csv.push_str(&vec!["x".repeat(150); 20].join(","));
        csv.push('\n');
    }
    fx.import(thread, "wide", &csv).await;
    let result = fx
        .sources
        .query(thread, "SELECT * FROM wide a, wide b")
        .await
        .expect("a result");
    assert!(result.truncated, "the result was cut");
    assert!(
        result.rows.len() < 5,
        "{} rows of 6 KB each",
        result.rows.len()
    );
    let text = texts::query_table(&result);
    assert!(text.len() <= 2000 + 100, "{} bytes", text.len());
    assert!(text.ends_with("the result was cut"), "{text}");
    // A header wider than the limit is refused with the reason.
    let long_names = (0..25)
        .map(|i| format!("c0 AS {}_{i}", "a".repeat(90)))
        .collect::<Vec<_>>()
        .join(", ");
    let error = fx
        .sources
        .query(thread, &format!("SELECT {long_names} FROM wide LIMIT 1"))
        .await
        .expect_err("too many columns");
    assert!(
        matches!(&error, QueryError::Refused(why) if texts::query_refusal(why).contains("select fewer columns")),
        "{error:?}"
    );
}

async fn one_organization_cannot_hold_every_query_slot(kind: DbKind) {
    let capacity = Capacity {
        concurrent_work: 3,
        concurrent_work_per_org: 2,
        ..Capacity::default()
    };
    let query = QueryLimits {
        timeout: Duration::from_secs(30),
        ..query_limits()
    };
    let fx = Fixture::new(kind, ImportLimits::default(), query, capacity).await;
    let noisy = fx.thread("org-noisy").await;
    let quiet = fx.thread("org-quiet").await;
    fx.import(noisy, "t", &numbers_csv(4)).await;
    fx.import(quiet, "t", &numbers_csv(4)).await;
    // Two queries that run until their time limit hold the noisy
    // organization's share.
    let slow = "SELECT sum(value % 7) FROM generate_series(1, 1000000000000)";
    let hogs: Vec<_> = (0..2)
        .map(|_| {
            let sources = Arc::clone(&fx.sources);
            let thread = noisy;
            // Refused while the probe below holds a slot: try again.
            tokio::spawn(async move {
                loop {
                    match sources.query(thread, slow).await {
                        Err(QueryError::Refused(_)) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        other => return other,
                    }
                }
            })
        })
        .collect();
    // Once the two run, a third from the same organization waits its turn
    // instead of being refused (a model's parallel calls): a probe that
    // waits rather than runs says they do.
    let patience = Duration::from_secs(3);
    let mut waited = false;
    for _ in 0..20 {
        let probe = fx.sources.query(noisy, "SELECT 1");
        if tokio::time::timeout(patience, probe).await.is_err() {
            waited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(waited, "the third waits for its organization's own work");
    let third = {
        let sources = Arc::clone(&fx.sources);
        tokio::spawn(async move { sources.query(noisy, "SELECT 1").await })
    };
    // Another organization still gets the slot the noisy one cannot take.
    let result = fx
        .sources
        .query(quiet, "SELECT count(*) FROM t")
        .await
        .expect("the quiet organization's query runs");
    assert_eq!(result.rows, vec![vec!["4".to_owned()]]);
    assert!(!third.is_finished(), "the third still waits");
    // When the organization's own work ends, the third runs.
    for hog in hogs {
        hog.abort();
    }
    let third = tokio::time::timeout(Duration::from_secs(20), third)
        .await
        .expect("the third ran once a slot of its own came free")
        .expect("joined")
        .expect("the third's query runs");
    assert_eq!(third.rows, vec![vec!["1".to_owned()]]);
}

async fn an_organization_past_its_data_source_bytes_is_refused(kind: DbKind) {
    let csv = numbers_csv(100);
    let capacity = Capacity {
        org_bytes: (csv.len() * 2) as u64,
        ..Capacity::default()
    };
    let fx = Fixture::new(kind, ImportLimits::default(), query_limits(), capacity).await;
    let first = fx.thread("org-a").await;
    let second = fx.thread("org-a").await;
    fx.import(first, "one", &csv).await;
    fx.import(second, "two", &csv).await;
    let error = fx
        .sources
        .import_csv(
            second,
            "three",
            "client",
            None,
            bytes::Bytes::copy_from_slice(csv.as_bytes()),
        )
        .await
        .expect_err("past the organization's bytes");
    assert!(
        matches!(error, ImportError::OrgQuotaExceeded { used, .. } if used == (csv.len() * 2) as u64),
        "{error:?}"
    );
    assert!(error.to_string().contains("delete threads"), "{error}");
    // Other organizations are not affected.
    let other = fx.thread("org-b").await;
    fx.import(other, "one", &csv).await;
    // Deleting a thread frees its bytes.
    assert!(
        fx.repo
            .delete_thread("org-a", "mallory", first)
            .await
            .expect("deleted")
    );
    fx.import(second, "three", &csv).await;
}

async fn a_csv_of_short_rows_is_refused_while_reading(kind: DbKind) {
    let fx = Fixture::with_defaults(kind).await;
    let thread = fx.thread("org-a").await;
    // 500 columns and a million one-field rows: 2 MB that would pad to
    // 500 million cells.
    let header = (0..500)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut csv = Vec::with_capacity(header.len() + 2_000_001);
    csv.extend_from_slice(header.as_bytes());
    csv.push(b'\n');
    for _ in 0..1_000_000 {
        csv.extend_from_slice(b"x\n");
    }
    let error = fx
        .sources
        .import_csv(
            thread,
            "wide",
            "client",
            None,
            bytes::Bytes::copy_from_slice(&csv),
        )
        .await
        .expect_err("too many padded cells");
    let limit = ImportLimits::default().max_cells;
    match &error {
        ImportError::TooManyCells {
            columns,
            rows,
            line,
            ..
        } => {
            assert_eq!(*columns, 500);
            // Reading stopped where the budget ran out, not at the end.
            assert_eq!(*rows, limit / 500);
            assert_eq!(*line, (limit / 500 + 2) as u64);
        }
        other => panic!("expected a cell limit, got {other:?}"),
    }
    assert!(error.to_string().contains("cells"), "{error}");
    assert!(fx.sources.list(thread).await.expect("listed").is_empty());
}

async fn a_query_counts_the_tables_it_reads_in_its_memory(kind: DbKind) {
    let query = QueryLimits {
        memory_bytes: 256 * 1024,
        ..query_limits()
    };
    let fx = Fixture::new(kind, ImportLimits::default(), query, Capacity::default()).await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "big", &numbers_csv(50_000)).await;
    let error = fx
        .sources
        .query(thread, "SELECT count(*) FROM big")
        .await
        .expect_err("the decoded table is larger than the query's memory");
    assert!(
        matches!(&error, QueryError::Engine(why) if why.contains("takes") && why.contains("bytes in memory")),
        "{error:?}"
    );
    // Stored and cached tables are left as they were.
    let _ = &fx.pool;
}

/// Found by the `csv_import` fuzz target: a table with no rows was stored
/// without a schema the loader could read back, so every later query of it
/// failed with an internal error.
async fn a_csv_with_a_header_and_no_rows_stays_queryable_from_storage(kind: DbKind) {
    let fx = Fixture::new(
        kind,
        ImportLimits::default(),
        query_limits(),
        Capacity {
            cache_bytes: 0,
            ..Capacity::default()
        },
    )
    .await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "empty", "name,amount\n").await;
    let result = fx
        .sources
        .query(
            thread,
            "SELECT COUNT(*) AS total, COUNT(name) AS names FROM empty",
        )
        .await
        .expect("the empty table answers");
    assert_eq!(result.rows, [["0", "0"]], "{result:?}");
}

db_tests!(
    a_csv_with_a_header_and_no_rows_stays_queryable_from_storage,
    no_source_query_ends_the_process,
    growing_functions_are_refused_with_the_limit_named,
    recursive_queries_are_refused,
    a_wide_result_is_cut_at_the_byte_limit,
    one_organization_cannot_hold_every_query_slot,
    an_organization_past_its_data_source_bytes_is_refused,
    a_csv_of_short_rows_is_refused_while_reading,
    a_query_counts_the_tables_it_reads_in_its_memory,
);
