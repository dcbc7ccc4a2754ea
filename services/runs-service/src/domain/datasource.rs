//! Data sources: CSV files imported into a thread as tables the model queries
//! with read-only SQL.

use std::{fmt, time::Duration};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// The type a column's values were inferred to have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    /// Anything that is not one of the types below.
    Text,
    /// Whole numbers that fit in 64 bits.
    Integer,
    /// Decimal numbers (64-bit floating point).
    Float,
    /// `true` or `false`.
    Boolean,
    /// Calendar dates, `YYYY-MM-DD`.
    Date,
    /// Points in time (RFC 3339 or `YYYY-MM-DD HH:MM:SS`, taken as UTC).
    Timestamp,
}

impl ColumnType {
    /// The SQL type name the model sees, e.g. `BIGINT`.
    pub fn sql_name(self) -> &'static str {
        match self {
            Self::Text => "TEXT",
            Self::Integer => "BIGINT",
            Self::Float => "DOUBLE",
            Self::Boolean => "BOOLEAN",
            Self::Date => "DATE",
            Self::Timestamp => "TIMESTAMP",
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.sql_name())
    }
}

/// One column of a data source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// The column's SQL name: lowercase `[a-z0-9_]`, never quoted.
    pub name: String,
    /// The type of its values.
    pub column_type: ColumnType,
}

/// A table imported into a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSource {
    /// The data source's id.
    pub id: String,
    /// The thread it belongs to; only that thread's queries see it.
    pub thread_id: String,
    /// The name queries use, unique within the thread.
    pub table_name: String,
    /// Where it came from: an MCP resource URI or the client's name for it.
    pub origin: String,
    /// The MCP integration it was read from, if any.
    pub integration_id: Option<String>,
    /// Its columns, in the file's order.
    pub columns: Vec<Column>,
    /// How many data rows it has.
    pub row_count: i64,
    /// The size of the imported CSV in bytes.
    pub size_bytes: i64,
    /// When it was imported, in Unix milliseconds.
    pub created_at: i64,
}

impl DataSource {
    /// A one-line description for the model, e.g.
    /// `sales (1200 rows): region TEXT, units BIGINT`.
    pub fn describe(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("{} {}", c.name, c.column_type))
            .collect();
        format!(
            "{} ({} rows): {}",
            self.table_name,
            self.row_count,
            columns.join(", ")
        )
    }
}

/// Bounds on what one import may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// The largest CSV accepted, in bytes.
    pub max_bytes: usize,
    /// The most data rows (the header not counted).
    pub max_rows: usize,
    /// The most columns.
    pub max_columns: usize,
    /// The largest single field, in bytes.
    pub max_field_bytes: usize,
    /// The most cells, rows × header columns: short rows are padded with
    /// NULLs, so a padded cell costs memory like any other. Checked while
    /// reading, so that a file of short rows is refused before it is built.
    pub max_cells: usize,
}

impl ImportLimits {
    /// The largest CSV accepted by default: below the default gRPC message
    /// limit (16 MiB), so that the same file fits an `ImportDataSource`
    /// request and an MCP resource read through mcp-service.
    pub const DEFAULT_MAX_BYTES: usize = 15 * 1024 * 1024;
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self {
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_rows: 5_000_000,
            max_columns: 500,
            max_field_bytes: 64 * 1024,
            max_cells: 8_000_000,
        }
    }
}

/// Bounds on one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// How long planning and execution together may take.
    pub timeout: Duration,
    /// The memory the engine may use for the query (joins, sorts, groups).
    pub memory_bytes: usize,
    /// The most rows returned; more set [`QueryResult::truncated`].
    pub max_rows: usize,
    /// Longer cells are cut to this many characters.
    pub max_cell_chars: usize,
    /// The most bytes of the rendered result (header, rows and separators);
    /// rows past it are left out and [`QueryResult::truncated`] is set.
    pub max_result_bytes: usize,
    /// The largest value a string function (`repeat`, `lpad`, `concat`,
    /// `||`, …) may build; a bigger one fails the query before it is built.
    /// One call over a batch may build at most [`Self::call_bytes`].
    pub max_value_bytes: usize,
    /// The memory ceiling of the process a query runs in (its data
    /// segment: heap, anonymous mappings, thread stacks): everything the
    /// query holds, [`Self::memory_bytes`] and the values expressions build
    /// included. A query that would pass it ends with an error, and the
    /// process is killed, not the service.
    pub process_memory_bytes: usize,
}

impl QueryLimits {
    /// The most bytes one call of a string function may build over a batch
    /// of rows: an eighth of the query's memory, so that the values in
    /// flight between operators stay a fraction of what a query may use.
    pub fn call_bytes(&self) -> usize {
        (self.memory_bytes / 8).max(self.max_value_bytes)
    }
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            memory_bytes: 256 * 1024 * 1024,
            max_rows: 200,
            max_cell_chars: 200,
            max_result_bytes: 64 * 1024,
            max_value_bytes: 1024 * 1024,
            process_memory_bytes: 512 * 1024 * 1024,
        }
    }
}

/// What all data sources of the process, and of one organization, may hold
/// and run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Memory for decoded tables kept between queries.
    pub cache_bytes: usize,
    /// Queries and imports running at once in the process; each query may
    /// use [`QueryLimits::memory_bytes`].
    pub concurrent_work: usize,
    /// Queries and imports one organization may run at once; below
    /// [`Self::concurrent_work`], so that one organization never holds every
    /// slot.
    pub concurrent_work_per_org: usize,
    /// The most CSV bytes all data sources of one organization may hold.
    pub org_bytes: u64,
}

impl Default for Capacity {
    fn default() -> Self {
        Self {
            cache_bytes: 512 * 1024 * 1024,
            concurrent_work: 4,
            concurrent_work_per_org: 2,
            org_bytes: 1024 * 1024 * 1024,
        }
    }
}

/// The rows a query returned, rendered as text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryResult {
    /// The result's column names.
    pub columns: Vec<String>,
    /// The rows, each cell rendered as text (`NULL` for nulls) and cut to
    /// [`QueryLimits::max_cell_chars`].
    pub rows: Vec<Vec<String>>,
    /// More rows existed than [`QueryLimits::max_rows`], or than fit in
    /// [`QueryLimits::max_result_bytes`].
    pub truncated: bool,
}

impl QueryResult {
    /// A compact text table for the model (header, rows, then "N rows" or
    /// "showing first N rows; the result was cut").
    ///
    /// Cells are separated by ` | `; a `|`, backslash or line break inside a
    /// cell is escaped so that every row stays on one line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        push_line(&mut out, &self.columns);
        for row in &self.rows {
            push_line(&mut out, row);
        }
        let n = self.rows.len();
        if self.truncated {
            out.push_str(&format!("showing first {n} rows; the result was cut"));
        } else if n == 1 {
            out.push_str("1 row");
        } else {
            out.push_str(&format!("{n} rows"));
        }
        out
    }
}

/// The bytes `cells` take as one line of [`QueryResult::to_text`], escapes
/// and line break included.
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

/// Why an import was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is larger than [`ImportLimits::max_bytes`].
    #[error("the CSV is {actual} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
        /// The file's size.
        actual: usize,
    },
    /// More data rows than [`ImportLimits::max_rows`].
    #[error("the CSV has {actual} data rows; the limit is {limit} rows")]
    TooManyRows {
        /// The limit.
        limit: usize,
        /// The file's data rows.
        actual: usize,
    },
    /// More columns than [`ImportLimits::max_columns`].
    #[error("the CSV has {actual} columns; the limit is {limit} columns")]
    TooManyColumns {
        /// The limit.
        limit: usize,
        /// The header's columns.
        actual: usize,
    },
    /// More cells (rows × columns, short rows padded) than
    /// [`ImportLimits::max_cells`]; found while reading, at `line`.
    #[error(
        "the CSV has {columns} columns and more than {rows} data rows (line {line}), \
         more than {limit} cells (rows × columns, short rows counted in full); \
         import fewer rows or fewer columns"
    )]
    TooManyCells {
        /// The limit.
        limit: usize,
        /// The header's columns.
        columns: usize,
        /// The rows read when the limit was passed.
        rows: usize,
        /// The line where the limit was passed (1-based).
        line: u64,
    },
    /// The organization's data sources would hold more than
    /// [`Capacity::org_bytes`].
    #[error(
        "the organization's data sources hold {used} bytes; this CSV of {size} bytes \
         would pass the limit of {limit} bytes; delete threads with data sources you no longer need"
    )]
    OrgQuotaExceeded {
        /// The limit.
        limit: u64,
        /// What the organization's data sources hold now.
        used: u64,
        /// The CSV's size.
        size: u64,
    },
    /// The organization, or the process, runs as many queries and imports as
    /// it may; the import may be retried shortly.
    #[error("{0}")]
    Busy(String),
    /// A field larger than [`ImportLimits::max_field_bytes`].
    #[error(
        "line {line}, column {column}: a field is {actual} bytes; the limit is {limit} bytes per field"
    )]
    FieldTooLarge {
        /// The line the row starts on (1-based).
        line: u64,
        /// The column (1-based).
        column: usize,
        /// The limit.
        limit: usize,
        /// The field's size.
        actual: usize,
    },
    /// A row has more non-empty fields than the header names.
    #[error(
        "line {line} has {actual} fields but the header names {expected} columns; \
         add names to the header for the extra fields"
    )]
    ExtraFields {
        /// The line the row starts on (1-based).
        line: u64,
        /// How many columns the header names.
        expected: usize,
        /// How many fields the row has.
        actual: usize,
    },
    /// The bytes are not valid UTF-8.
    #[error("line {line} is not valid UTF-8 text")]
    InvalidUtf8 {
        /// The line (1-based).
        line: u64,
    },
    /// The bytes are not CSV.
    #[error("line {line} is not valid CSV: {message}")]
    InvalidCsv {
        /// The line (1-based).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The first row names no column.
    #[error("the first line must name the columns, but every name in it is blank")]
    NoHeader,
    /// There is nothing in the file.
    #[error("the CSV is empty")]
    Empty,
    /// Storing the table failed.
    #[error("failed to store the data source")]
    Storage(#[source] anyhow::Error),
}

/// Why a query returned no result.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The text is not a single read-only query; says why.
    #[error("query refused: {0}")]
    Refused(String),
    /// The engine rejected or failed the query; its own words, so that the
    /// model can fix its SQL.
    #[error("{0}")]
    Engine(String),
    /// The query ran out of time and was stopped.
    #[error("the query was stopped after {0:?}; simplify it or filter earlier")]
    Timeout(Duration),
    /// Loading the thread's tables or running the engine failed.
    #[error("the query failed")]
    Internal(#[source] anyhow::Error),
}

/// A thread's data sources: imported CSV tables queried with read-only SQL.
#[async_trait]
pub trait DataSources: Send + Sync + 'static {
    /// Parses, infers types, makes header names safe and unique, stores
    /// durably; the table name derives from `name` (sanitised, unique within
    /// the thread). `origin` is the MCP resource URI or the client's name for
    /// the file.
    async fn import_csv(
        &self,
        thread_id: &str,
        name: &str,
        origin: &str,
        integration_id: Option<&str>,
        csv: &[u8],
    ) -> Result<DataSource, ImportError>;

    /// The thread's data sources, oldest first.
    async fn list(&self, thread_id: &str) -> Result<Vec<DataSource>, anyhow::Error>;

    /// Runs one read-only SQL query over the thread's data sources.
    async fn query(&self, thread_id: &str, sql: &str) -> Result<QueryResult, QueryError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_table_escapes_cells_and_says_how_many_rows() {
        let result = QueryResult {
            columns: vec!["a".into(), "b".into()],
            rows: vec![vec!["x|y".into(), "line\nbreak".into()]],
            truncated: false,
        };
        assert_eq!(result.to_text(), "a | b\nx\\|y | line\\nbreak\n1 row");
        let cut = QueryResult {
            truncated: true,
            ..result
        };
        assert!(
            cut.to_text()
                .ends_with("showing first 1 rows; the result was cut")
        );
    }

    #[test]
    fn rendered_line_bytes_match_the_text_table() {
        let cells = vec!["x|y".to_owned(), "a\\b\nc".to_owned(), "é".to_owned()];
        let mut line = String::new();
        push_line(&mut line, &cells);
        assert_eq!(rendered_line_bytes(&cells), line.len());
    }
}
