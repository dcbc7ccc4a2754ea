//! The CSV import's parser alone (the part that reads the client's or the
//! MCP server's bytes), many times faster than `csv_import`'s whole round
//! trip through storage: any bytes, with the service's default limits.
//!
//! Checked on every input: no panic, no abort; an accepted file gives plain,
//! unique column names and no more columns, rows or cells than the limits
//! allow.

#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use switchboard_fuzz::{import_limits, is_plain_identifier};
use switchboard_runs_service::outbound::datasource::parse_csv;

fuzz_target!(|csv: &[u8]| {
    let limits = import_limits();
    let Ok((columns, rows)) = parse_csv(csv, &limits) else {
        return;
    };
    assert!(!columns.is_empty(), "an accepted file has columns");
    assert!(
        columns.len() <= limits.max_columns,
        "{} columns",
        columns.len()
    );
    assert!(rows <= limits.max_rows, "{rows} rows");
    assert!(rows * columns.len() <= limits.max_cells, "{rows} rows");
    let mut seen = HashSet::new();
    for column in &columns {
        assert!(is_plain_identifier(&column.name), "{:?}", column.name);
        assert!(seen.insert(column.name.as_str()), "{:?} twice", column.name);
    }
});
