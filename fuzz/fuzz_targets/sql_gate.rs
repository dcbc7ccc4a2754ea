//! The SQL of `source_query`: any text a model sends, through the public
//! data-source store (the read-only gate, then DataFusion over two small
//! tables), with the service's default limits and a 2 s timeout.
//!
//! Checked on every input: no panic, no abort, no allocation past the
//! fuzzer's memory limit; the answer is a result or one of the query errors
//! the model reads; a result keeps to the row and cell limits and renders as
//! text; and nothing a query does changes the tables the next one sees.

#![no_main]

use std::sync::{
    LazyLock,
    atomic::{AtomicU64, Ordering},
};

use libfuzzer_sys::fuzz_target;
use switchboard_fuzz::{query_limits, thread_id};
use switchboard_runs_service::{
    domain::{
        datasource::{DataSources as _, QueryError},
        texts,
    },
    outbound::datasource::SqlDataSources,
};

/// A table of every column type, with nulls, and a small one to join.
const SALES: &str = "id,region,units,price,paid,day,at,note\n\
    1,north,10,2.5,true,2024-01-01,2024-01-01T10:00:00Z,first\n\
    2,south,,3.25,false,2024-02-29,2024-02-29 23:59:59,\n\
    3,north,7,,true,,2024-03-01T00:00:00+02:00,a|b\n\
    4,east,-3,1e3,,2023-12-31,,\"quoted, with comma\"\n\
    5,,0,0.0,false,1970-01-01,1970-01-01T00:00:00Z,\u{e9}t\u{e9}\n";
const REGIONS: &str = "region,manager\nnorth,ann\nsouth,bo\nwest,cy\n";
const SALES_ROWS: &str = "5";

struct Fixture {
    runtime: tokio::runtime::Runtime,
    sources: SqlDataSources,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let runtime = switchboard_fuzz::runtime();
    let sources = runtime.block_on(async {
        let pool = switchboard_fuzz::database().await;
        let sources = SqlDataSources::new(pool, switchboard_fuzz::import_limits(), query_limits())
            .with_queries_in_process();
        for (name, csv) in [("sales.csv", SALES), ("regions.csv", REGIONS)] {
            sources
                .import_csv(thread_id(), name, name, None, csv.as_bytes().to_vec().into())
                .await
                .expect("the fixture tables import (a set-up invariant)");
        }
        sources
    });
    Fixture { runtime, sources }
});

static RUNS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let fx = &*FIXTURE;
    fx.runtime.block_on(check(fx, sql));
});

async fn check(fx: &Fixture, sql: &str) {
    let limits = query_limits();
    match fx.sources.query(thread_id(), sql).await {
        Ok(result) => {
            assert!(result.rows.len() <= limits.max_rows, "{sql}");
            for row in &result.rows {
                assert_eq!(row.len(), result.columns.len(), "{sql}");
                for cell in row {
                    // The cut adds one `…`.
                    assert!(cell.chars().count() <= limits.max_cell_chars + 1, "{sql}");
                }
            }
            let text = texts::query_table(&result);
            assert!(text.lines().count() >= result.rows.len() + 1, "{sql}");
        }
        Err(QueryError::Internal(error)) => panic!("{sql}: internal failure {error:#}"),
        Err(
            QueryError::Refused(_)
            | QueryError::Engine(_)
            | QueryError::OutOfMemory { .. }
            | QueryError::Timeout(_),
        ) => {}
    }
    // Now and then: the tables are as imported, whatever ran before.
    if RUNS.fetch_add(1, Ordering::Relaxed) % 1024 == 0 {
        let count = fx
            .sources
            .query(thread_id(), "SELECT COUNT(*) FROM sales")
            .await
            .expect("the fixture table answers (a set-up invariant)");
        assert_eq!(count.rows, vec![vec![SALES_ROWS.to_owned()]], "after {sql}");
        let tables = fx
            .sources
            .list(thread_id())
            .await
            .expect("the fixture tables list (a set-up invariant)");
        assert_eq!(tables.len(), 2, "after {sql}");
    }
}
