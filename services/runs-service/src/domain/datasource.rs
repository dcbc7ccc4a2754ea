//! Data sources: CSV files imported into a thread as tables the model queries
//! with read-only SQL.

use bytes::Bytes;
use std::{fmt, time::Duration};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::ids::{DataSourceId, IntegrationId, ThreadId};

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
    pub id: DataSourceId,
    /// The thread it belongs to; only that thread's queries see it.
    pub thread_id: ThreadId,
    /// The name queries use, unique within the thread.
    pub table_name: String,
    /// Where it came from: an MCP resource URI, `tool:<name>` for a tool
    /// result too large for the context, or the client's name for it.
    pub origin: String,
    /// The MCP integration it was read from, if any.
    pub integration_id: Option<IntegrationId>,
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
    /// Queries and imports of one organization that may wait for its share;
    /// past it, more are refused at once.
    pub queued_per_org: usize,
    /// The most CSV bytes all data sources of one organization may hold.
    pub org_bytes: u64,
    /// Threads that parse imports for all organizations, in turns fair
    /// between organizations; also the threads of each query's process.
    pub threads: usize,
    /// Nice levels below the service's that data-source work runs at, so
    /// that the kernel gives a core to a request first.
    pub nice: i32,
    /// Whether data-source work runs in the kernel's idle class
    /// (`SCHED_IDLE`): only on a core no request wants, giving it up as soon
    /// as one does.
    pub sched_idle: bool,
    /// CSV bytes an import parses in one turn of those threads; between
    /// turns it waits behind the other organizations' imports, so that each
    /// waits behind at most about one such piece of another's. Typing and
    /// encoding the table go in pieces of as many cells.
    pub piece_bytes: usize,
}

impl Capacity {
    /// The default [`Self::threads`]: one fewer than the machine's cores
    /// (at least one), to leave a core for calls.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .saturating_sub(1)
            .max(1)
    }

    /// The default [`Self::nice`].
    pub const DEFAULT_NICE: i32 = 10;

    /// The default [`Self::piece_bytes`], 64 KiB: on a 1.7 MB, 50,000-row
    /// file, 59 pieces of at most 24 ms each in a debug build (the whole
    /// file in one took 540 ms, the pieces together no longer), and an
    /// optimized build is several times faster; so a small import waits
    /// milliseconds behind each other organization's large one, while a
    /// turn's own cost (a lock and a queue push) stays far below a piece's
    /// work.
    pub const DEFAULT_PIECE_BYTES: usize = 64 * 1024;
}

impl Default for Capacity {
    fn default() -> Self {
        Self {
            cache_bytes: 512 * 1024 * 1024,
            concurrent_work: 4,
            concurrent_work_per_org: 2,
            queued_per_org: 16,
            org_bytes: 1024 * 1024 * 1024,
            threads: Self::default_threads(),
            nice: Self::DEFAULT_NICE,
            sched_idle: true,
            piece_bytes: Self::DEFAULT_PIECE_BYTES,
        }
    }
}

/// The rows a query returned, rendered as text; `texts::query_table` lays
/// them out for the model.
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

/// Why no slot for a query or an import was given; the caller may retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Busy {
    /// The organization already runs its share of queries and imports.
    OrgBusy {
        /// Its share.
        limit: usize,
    },
    /// No slot of the process came free within the wait.
    Timeout(Duration),
}

/// Why an import was refused or failed: the facts, each with its numbers;
/// `texts::import_failed` (also its `Display`) says them in words.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is larger than [`ImportLimits::max_bytes`].
    TooLarge {
        /// The limit.
        limit: usize,
        /// The file's size.
        actual: usize,
    },
    /// More data rows than [`ImportLimits::max_rows`].
    TooManyRows {
        /// The limit.
        limit: usize,
        /// The file's data rows.
        actual: usize,
    },
    /// More columns than [`ImportLimits::max_columns`].
    TooManyColumns {
        /// The limit.
        limit: usize,
        /// The header's columns.
        actual: usize,
    },
    /// More cells (rows × columns, short rows padded) than
    /// [`ImportLimits::max_cells`]; found while reading, at `line`.
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
    Busy(Busy),
    /// A field larger than [`ImportLimits::max_field_bytes`].
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
    ExtraFields {
        /// The line the row starts on (1-based).
        line: u64,
        /// How many columns the header names.
        expected: usize,
        /// How many fields the row has.
        actual: usize,
    },
    /// The bytes are not valid UTF-8.
    InvalidUtf8 {
        /// The line (1-based).
        line: u64,
    },
    /// The bytes are not CSV.
    InvalidCsv {
        /// The line (1-based).
        line: u64,
        /// What the CSV reader found wrong, in its words.
        message: String,
    },
    /// The first row names no column.
    NoHeader,
    /// There is nothing in the file.
    Empty,
    /// Storing the table failed.
    Storage(#[source] anyhow::Error),
}

/// Why a query was refused before it ran (or before its rows were sent):
/// the facts, each with its numbers; `texts` says them in words. It crosses
/// to the service from a query's worker process, hence serde.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The text is longer than the gate accepts.
    TooLong {
        /// The text's size in bytes.
        bytes: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The text holds this many statements, not exactly one.
    StatementCount(usize),
    /// The text parsed to no statement.
    NoStatement,
    /// A statement that is not a read-only query, named by its leading
    /// keywords (`DROP TABLE`, `COPY`, `SELECT … INTO`) or `a data change`.
    NotReadOnly(String),
    /// `WITH RECURSIVE`, which can grow without end.
    Recursive,
    /// More tokens than the planner handles in time.
    TooManyTokens {
        /// The text's tokens.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A longer chain of operators than the planner handles safely.
    TooManyOperators {
        /// The text's operators.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A function off the list of those data-source queries may call.
    FunctionNotAvailable(String),
    /// A table function whose arguments are calls or subqueries, which would
    /// be evaluated before any bound is in place.
    NonConstantArguments(String),
    /// The result's column names alone pass [`QueryLimits::max_result_bytes`].
    HeaderTooLarge {
        /// The result's columns.
        columns: usize,
        /// The bytes the header line takes.
        bytes: usize,
        /// The limit for a whole result.
        limit: usize,
    },
    /// The engine's plan check refused the statement; its own words.
    NotAllowed(String),
    /// No slot for the query; it may be retried shortly.
    Busy(Busy),
    /// The thread has no data sources to query.
    NoDataSources,
}

/// Why a query returned no result; `texts` (also its `Display`) says it in
/// words.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The text is not a single read-only query, or may not run now.
    Refused(Refusal),
    /// The engine rejected or failed the query; its own words, so that the
    /// model can fix its SQL.
    Engine(String),
    /// The query's process passed [`QueryLimits::process_memory_bytes`] and
    /// was stopped.
    OutOfMemory {
        /// The limit in bytes.
        limit_bytes: usize,
    },
    /// The query ran out of time and was stopped.
    Timeout(Duration),
    /// Loading the thread's tables or running the engine failed.
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
        thread_id: ThreadId,
        name: &str,
        origin: &str,
        integration_id: Option<IntegrationId>,
        csv: Bytes,
    ) -> Result<DataSource, ImportError>;

    /// The thread's data sources, oldest first.
    async fn list(&self, thread_id: ThreadId) -> Result<Vec<DataSource>, anyhow::Error>;

    /// Runs one read-only SQL query over the thread's data sources.
    async fn query(&self, thread_id: ThreadId, sql: &str) -> Result<QueryResult, QueryError>;

    /// Called before the thread and its data sources' rows are deleted:
    /// records that what they hold outside the database (objects in a
    /// store) must go once the thread is gone, so that a failure after the
    /// rows are deleted leaves a record to finish from.
    async fn thread_deleting(&self, _thread_id: ThreadId) -> Result<(), anyhow::Error> {
        Ok(())
    }

    /// Called after the thread's rows were deleted: deletes what its data
    /// sources held outside the database. A failure is logged and left to
    /// the record [`DataSources::thread_deleting`] wrote.
    async fn thread_deleted(&self, _thread_id: ThreadId) {}
}
