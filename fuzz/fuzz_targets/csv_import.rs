//! CSV import (`ImportDataSource`, CSV resources): any bytes, with the
//! service's default limits, through the public data-source store over an
//! in-memory SQLite database.
//!
//! Input: one length byte `n` (taken modulo 32), `n` bytes of the client's
//! name for the file, then the CSV.
//!
//! Checked on every input: no panic, no abort; a refusal is one of the
//! import's own errors, never a storage failure; an accepted file gives plain
//! unique column names within the limits, and the stored table decodes again
//! (no cache) with as many rows as the import reported, every column usable
//! by name in SQL.

#![no_main]

use std::{collections::HashSet, sync::LazyLock};

use libfuzzer_sys::fuzz_target;
use switchboard_fuzz::{import_limits, is_plain_identifier, thread_id};
use switchboard_runs_service::{
    domain::datasource::{DataSources as _, ImportError},
    outbound::datasource::SqlDataSources,
};

struct Fixture {
    runtime: tokio::runtime::Runtime,
    pool: sqlx::AnyPool,
    sources: SqlDataSources,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let runtime = switchboard_fuzz::runtime();
    let pool = runtime.block_on(switchboard_fuzz::database());
    let sources = switchboard_fuzz::uncached_sources(pool.clone());
    Fixture {
        runtime,
        pool,
        sources,
    }
});

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 32).min(rest.len());
    let (name, csv) = rest.split_at(n);
    let name = String::from_utf8_lossy(name);
    let fx = &*FIXTURE;
    fx.runtime.block_on(check(fx, &name, csv));
});

async fn check(fx: &Fixture, name: &str, csv: &[u8]) {
    let limits = import_limits();
    let source = match fx
        .sources
        .import_csv(thread_id(), name, "fuzz.csv", None, csv.to_vec().into())
        .await
    {
        Ok(source) => source,
        Err(ImportError::Storage(error)) => {
            panic!("a parsed CSV failed to store: {error:#}")
        }
        Err(_refused) => return,
    };

    assert!(is_plain_identifier(&source.table_name), "{source:?}");
    assert!(!source.columns.is_empty() && source.columns.len() <= limits.max_columns);
    assert!(usize::try_from(source.row_count).is_ok_and(|rows| rows <= limits.max_rows));
    let mut names = HashSet::new();
    for column in &source.columns {
        assert!(is_plain_identifier(&column.name), "{source:?}");
        assert!(names.insert(column.name.as_str()), "duplicate: {source:?}");
    }

    // Every column by its bare name, over the stored (not cached) table.
    let counts: Vec<String> = source
        .columns
        .iter()
        .map(|c| format!("COUNT({})", c.name))
        .collect();
    let sql = format!(
        "SELECT COUNT(*) AS total, {} FROM {}",
        counts.join(", "),
        source.table_name
    );
    let result = fx
        .sources
        .query(thread_id(), &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?} for {source:?}"));
    assert_eq!(
        result.rows.first().and_then(|row| row.first()),
        Some(&source.row_count.to_string()),
        "{sql}"
    );

    // Each import adds a row; keep the database small.
    sqlx::query("DELETE FROM data_sources WHERE id = $1")
        .bind(source.id.to_string())
        .execute(&fx.pool)
        .await
        .expect("the imported row is deleted (a set-up invariant)");
}
