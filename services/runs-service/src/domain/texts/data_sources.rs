//! What the model (and an importing client) reads about data sources: the
//! query table, why an import or a query failed, and why a query was refused.
//! The adapters return the facts; the words are written here.

use std::fmt;

use crate::domain::datasource::{Busy, ImportError, QueryError, QueryResult, Refusal};

/// A compact text table of `result` (header, rows, then "N rows" or
/// "showing first N rows; the result was cut").
///
/// Cells are separated by ` | `; a `|`, backslash or line break inside a
/// cell is escaped so that every row stays on one line.
pub fn query_table(result: &QueryResult) -> String {
    let mut out = table_lines(&result.columns, &result.rows);
    let n = result.rows.len();
    if result.truncated {
        out.push_str(&format!("showing first {n} rows; the result was cut"));
    } else if n == 1 {
        out.push_str("1 row");
    } else {
        out.push_str(&format!("{n} rows"));
    }
    out
}

/// The bytes `cells` take as one line of [`query_table`], escapes and line
/// break included, so that the engine can stop before a result passes its
/// byte limit.
pub fn rendered_line_bytes(cells: &[String]) -> usize {
    let separators = 3 * cells.len().saturating_sub(1);
    cells
        .iter()
        .map(|cell| {
            cell.len()
                + cell
                    .bytes()
                    .filter(|b| matches!(b, b'|' | b'\\' | b'\n' | b'\r'))
                    .count()
        })
        .sum::<usize>()
        + separators
        + 1
}

/// The header and rows of a text table, one line each, as [`query_table`]
/// lays them out.
pub(super) fn table_lines(columns: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    push_line(&mut out, columns);
    for row in rows {
        push_line(&mut out, row);
    }
    out
}

fn push_line(out: &mut String, cells: &[String]) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push_str(" | ");
        }
        for c in cell.chars() {
            match c {
                '|' => out.push_str("\\|"),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c => out.push(c),
            }
        }
    }
    out.push('\n');
}

/// Why an import was refused or failed, for the model (a CSV resource) and
/// for a client importing a file.
pub fn import_failed(error: &ImportError) -> String {
    match error {
        ImportError::TooLarge { limit, actual } => {
            format!("the CSV is {actual} bytes; the limit is {limit} bytes")
        }
        ImportError::TooManyRows { limit, actual } => {
            format!("the CSV has {actual} data rows; the limit is {limit} rows")
        }
        ImportError::TooManyColumns { limit, actual } => {
            format!("the CSV has {actual} columns; the limit is {limit} columns")
        }
        ImportError::TooManyCells {
            limit,
            columns,
            rows,
            line,
        } => format!(
            "the CSV has {columns} columns and more than {rows} data rows (line {line}), \
             more than {limit} cells (rows × columns, short rows counted in full); \
             import fewer rows or fewer columns"
        ),
        ImportError::OrgQuotaExceeded { limit, used, size } => format!(
            "the organization's data sources hold {used} bytes; this CSV of {size} bytes \
             would pass the limit of {limit} bytes; delete threads with data sources you no longer need"
        ),
        ImportError::Busy(busy) => slot_busy(busy, "import"),
        ImportError::FieldTooLarge {
            line,
            column,
            limit,
            actual,
        } => format!(
            "line {line}, column {column}: a field is {actual} bytes; the limit is {limit} bytes per field"
        ),
        ImportError::ExtraFields {
            line,
            expected,
            actual,
        } => format!(
            "line {line} has {actual} fields but the header names {expected} columns; \
             add names to the header for the extra fields"
        ),
        ImportError::InvalidUtf8 { line } => format!("line {line} is not valid UTF-8 text"),
        ImportError::InvalidCsv { line, message } => {
            format!("line {line} is not valid CSV: {message}")
        }
        ImportError::NoHeader => {
            "the first line must name the columns, but every name in it is blank".to_owned()
        }
        ImportError::Empty => "the CSV is empty".to_owned(),
        ImportError::Storage(_) => "failed to store the data source".to_owned(),
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&import_failed(self))
    }
}

/// Why no slot was given, with when to retry `what` (a query or an import).
fn slot_busy(busy: &Busy, what: &str) -> String {
    match busy {
        Busy::OrgBusy { limit } => format!(
            "your organization already runs {limit} data-source queries or imports at once, \
             its limit; retry this {what} when one of them has finished"
        ),
        Busy::Timeout(wait) => format!(
            "every data-source slot stayed busy for {}s; retry this {what} in a few seconds",
            wait.as_secs_f64()
        ),
    }
}

/// Why a query was refused, the words after "Query refused: ".
pub fn query_refusal(refusal: &Refusal) -> String {
    let read_only = |what: &str| {
        format!("only a read-only query (SELECT, or WITH … SELECT) may run, not {what}")
    };
    match refusal {
        Refusal::TooLong { bytes, limit } => {
            format!("the query is {bytes} bytes; the limit is {limit} bytes")
        }
        Refusal::StatementCount(count) => {
            format!("send exactly one SELECT statement; this text has {count}")
        }
        Refusal::NoStatement => "the text has no statement".to_owned(),
        Refusal::NotReadOnly(what) => read_only(what),
        Refusal::Recursive => "recursive queries (WITH RECURSIVE) are not allowed; \
                               use joins, window functions or generate_series instead"
            .to_owned(),
        Refusal::TooManyTokens { count, limit } => format!(
            "the query has {count} tokens; the limit is {limit}; \
             filter with a condition instead of listing values"
        ),
        Refusal::TooManyOperators { count, limit } => format!(
            "the query has {count} operators; the limit is {limit}; \
             use IN (…) for long lists of values"
        ),
        Refusal::FunctionNotAvailable(name) => format!(
            "the function `{name}` is not available in data-source queries; use common SQL \
             functions (aggregates, window functions, string, number and date functions, casts)"
        ),
        Refusal::NonConstantArguments(name) => format!(
            "the arguments of `{name}` must be constants (numbers, dates, intervals), \
             not function calls or subqueries"
        ),
        Refusal::HeaderTooLarge {
            columns,
            bytes,
            limit,
        } => format!(
            "the result's {columns} column names alone take {bytes} bytes; the limit is {limit} bytes \
             for a whole result; select fewer columns"
        ),
        Refusal::NotAllowed(message) => message.clone(),
        Refusal::Busy(busy) => slot_busy(busy, "query"),
        Refusal::NoDataSources => "the thread has no data sources".to_owned(),
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&query_refusal(self))
    }
}

/// Why a query's process was stopped at its memory ceiling, the words after
/// "Query failed: ".
pub fn query_out_of_memory(limit_bytes: usize) -> String {
    format!(
        "the query needed more than the {} MiB of memory a query may use and was stopped; \
         filter or aggregate earlier, or build smaller values",
        limit_bytes / (1024 * 1024)
    )
}

/// For logs; the model reads `query_refused`, `query_failed` and their kin.
impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(refusal) => write!(f, "query refused: {refusal}"),
            Self::Engine(message) => f.write_str(message),
            Self::OutOfMemory { limit_bytes } => f.write_str(&query_out_of_memory(*limit_bytes)),
            Self::Timeout(limit) => write!(
                f,
                "the query was stopped after {limit:?}; simplify it or filter earlier"
            ),
            Self::Internal(_) => f.write_str("the query failed"),
        }
    }
}
