//! What the model reads of a tool result too large for its context: the
//! table it became, or the part of it that was kept and where it was cut.

use super::{data_sources::table_lines, results::column_list};
use crate::domain::{
    datasource::DataSource,
    oversized::{Cut, NotTable, Shape},
};

fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::JsonArray => "a JSON array of objects",
        Shape::Ndjson => "newline-delimited JSON",
        Shape::Csv => "CSV",
    }
}

/// A large tabular result of `tool` (`bytes` long) stored as `source`; the
/// model reads its schema and `first_rows` instead of the result.
pub fn result_table(
    tool: &str,
    shape: Shape,
    bytes: usize,
    source: &DataSource,
    first_rows: &[Vec<String>],
) -> String {
    let shown = first_rows.len();
    let names: Vec<String> = source.columns.iter().map(|c| c.name.clone()).collect();
    let preview = table_lines(&names, first_rows);
    format!(
        "The result of {tool} is {bytes} bytes of {shape}, too large to read here, so it was stored as a data source of this conversation.\nTable: {table}\nColumns: {columns}\nRows: {rows}\nFirst {shown} rows:\n{preview}Query the whole result with the source_query tool, for example: SELECT * FROM {table} LIMIT 10",
        shape = shape_name(shape),
        table = source.table_name,
        columns = column_list(source),
        rows = source.row_count,
    )
}

/// A large result cut at `limit` bytes: its first part, then where it was
/// cut and how much was left out, and why it is not a table when it was
/// written as one (`reason`, in words).
pub fn result_cut(cut: &Cut, limit: usize, reason: Option<&str>) -> String {
    let why = reason.map_or_else(String::new, |reason| {
        format!(" It could not be stored as a table: {reason}.")
    });
    format!(
        "{head}\n[The result was cut: it is {total} bytes, more than the {limit} bytes a result may take here. Shown: its first {shown} bytes, up to line {line}; left out: the {left} bytes after them, up to line {lines}.{why}]",
        head = cut.head,
        total = cut.total_bytes,
        shown = cut.head.len(),
        line = cut.cut_line,
        left = cut.left_out(),
        lines = cut.total_lines,
    )
}

/// Why a result written as a table is not one.
pub fn not_a_table(why: &NotTable) -> String {
    match why {
        NotTable::Json { shape, message } => {
            format!("it is not {}: {message}", shape_name(*shape))
        }
        NotTable::TooManyKeys { limit } => {
            format!(
                "its objects name more than {limit} different keys, the most columns a table may have"
            )
        }
    }
}
