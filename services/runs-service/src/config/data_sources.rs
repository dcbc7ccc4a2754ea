//! Settings of data sources: what they may hold, use and run at once.

use anyhow::ensure;

use super::ObjectStoreArgs;

use crate::domain::{
    datasource::{Capacity, ImportLimits, QueryLimits},
    tools::DEFAULT_TABLE_BYTES,
};

/// The shortest [`DataSourceArgs::tool_result_table_bytes`]: shorter, and
/// ordinary answers would be stored or cut.
const MIN_TABLE_BYTES: usize = 1024;

/// The most [`DataSourceArgs::threads`]: each query's process runs as many.
const MAX_THREADS: usize = 256;

/// The highest nice value.
const MAX_NICE: i32 = 19;

/// What data sources may hold, use and run at once.
///
/// Memory adds up as: `cache_bytes` (decoded tables kept between queries)
/// plus `concurrent_work × query_memory_bytes` (each running query or
/// import, the decoded tables a query reads counted in). With the defaults:
/// 512 MiB + 4 × 256 MiB = 1.5 GiB; leave room for the rest of the service
/// when setting a pod's memory limit.
#[derive(Debug, Clone, clap::Args)]
pub struct DataSourceArgs {
    /// Largest CSV imported, in bytes; must be below
    /// `SWITCHBOARD_MAX_MESSAGE_BYTES`, which every CSV crosses (as an
    /// `ImportDataSource` request or an MCP resource read through
    /// mcp-service).
    #[arg(long = "data-source-max-csv-bytes", env = "SWITCHBOARD_DATA_SOURCE_MAX_CSV_BYTES", default_value_t = ImportLimits::DEFAULT_MAX_BYTES)]
    pub max_csv_bytes: usize,
    /// Most cells (rows × columns, short rows counted in full) of one CSV.
    #[arg(long = "data-source-max-cells", env = "SWITCHBOARD_DATA_SOURCE_MAX_CELLS", default_value_t = ImportLimits::default().max_cells)]
    pub max_cells: usize,
    /// Memory for decoded tables kept between queries, in bytes.
    #[arg(long = "data-source-cache-bytes", env = "SWITCHBOARD_DATA_SOURCE_CACHE_BYTES", default_value_t = Capacity::default().cache_bytes)]
    pub cache_bytes: usize,
    /// Memory one query may use (joins, sorts, groups and the tables it
    /// reads), in bytes.
    #[arg(long = "data-source-query-memory-bytes", env = "SWITCHBOARD_DATA_SOURCE_QUERY_MEMORY_BYTES", default_value_t = QueryLimits::default().memory_bytes)]
    pub query_memory_bytes: usize,
    /// Queries and imports running at once in the process.
    #[arg(long = "data-source-concurrent-work", env = "SWITCHBOARD_DATA_SOURCE_CONCURRENT_WORK", default_value_t = Capacity::default().concurrent_work)]
    pub concurrent_work: usize,
    /// Queries and imports one organization may run at once; below
    /// `SWITCHBOARD_DATA_SOURCE_CONCURRENT_WORK`.
    #[arg(long = "data-source-concurrent-work-per-org", env = "SWITCHBOARD_DATA_SOURCE_CONCURRENT_WORK_PER_ORG", default_value_t = Capacity::default().concurrent_work_per_org)]
    pub concurrent_work_per_org: usize,
    /// Queries and imports of one organization that may wait for its share
    /// (a model's parallel calls); past it, more are refused at once.
    #[arg(long = "data-source-queued-per-org", env = "SWITCHBOARD_DATA_SOURCE_QUEUED_PER_ORG", default_value_t = Capacity::default().queued_per_org)]
    pub queued_per_org: usize,
    /// Threads that parse imports for all organizations, in turns fair
    /// between them, and the threads of each query's process; by default
    /// one fewer than the cores, at least one, so that a core is left for
    /// calls.
    #[arg(long = "data-source-threads", env = "SWITCHBOARD_DATA_SOURCE_THREADS")]
    pub threads: Option<usize>,
    /// Nice levels below the service's that data-source work runs at (0 to
    /// 19), so that the kernel gives a core to a request first.
    #[arg(long = "data-source-nice", env = "SWITCHBOARD_DATA_SOURCE_NICE", default_value_t = Capacity::DEFAULT_NICE)]
    pub nice: i32,
    /// Whether data-source work runs in the kernel's idle class
    /// (`SCHED_IDLE`): only on a core no request wants, giving it up at once
    /// when one does; `false` leaves only the nice value between it and
    /// the requests.
    #[arg(long = "data-source-sched-idle", env = "SWITCHBOARD_DATA_SOURCE_SCHED_IDLE", default_value_t = Capacity::default().sched_idle, action = clap::ArgAction::Set)]
    pub sched_idle: bool,
    /// CSV bytes an import parses in one turn of the data-source threads
    /// (and cells typed and encoded in one, as many as those bytes hold),
    /// between which the turns go round the organizations; from 1 to
    /// `SWITCHBOARD_DATA_SOURCE_MAX_CSV_BYTES` (a whole import a turn).
    #[arg(long = "data-source-piece-bytes", env = "SWITCHBOARD_DATA_SOURCE_PIECE_BYTES", default_value_t = Capacity::DEFAULT_PIECE_BYTES)]
    pub piece_bytes: usize,
    /// CSV bytes all data sources of one organization may hold.
    #[arg(long = "data-source-org-bytes", env = "SWITCHBOARD_DATA_SOURCE_ORG_BYTES", default_value_t = Capacity::default().org_bytes)]
    pub org_bytes: u64,
    /// Most bytes of a query's rendered result.
    #[arg(long = "data-source-query-max-result-bytes", env = "SWITCHBOARD_DATA_SOURCE_QUERY_MAX_RESULT_BYTES", default_value_t = QueryLimits::default().max_result_bytes)]
    pub query_max_result_bytes: usize,
    /// Largest value a string function of a query may build, in bytes.
    #[arg(long = "data-source-query-max-value-bytes", env = "SWITCHBOARD_DATA_SOURCE_QUERY_MAX_VALUE_BYTES", default_value_t = QueryLimits::default().max_value_bytes)]
    pub query_max_value_bytes: usize,
    /// Memory ceiling of the process one query runs in, in bytes (above
    /// `SWITCHBOARD_DATA_SOURCE_QUERY_MEMORY_BYTES`).
    #[arg(long = "data-source-query-max-memory-bytes", env = "SWITCHBOARD_DATA_SOURCE_QUERY_MAX_MEMORY_BYTES", default_value_t = QueryLimits::default().process_memory_bytes)]
    pub query_max_memory_bytes: usize,
    /// Longest tool result the model reads as it is, in bytes; a longer
    /// one that is a table (a JSON array of objects, newline-delimited
    /// JSON, CSV) becomes a data source of the thread, any other is cut.
    #[arg(long = "tool-result-table-bytes", env = "SWITCHBOARD_TOOL_RESULT_TABLE_BYTES", default_value_t = DEFAULT_TABLE_BYTES)]
    pub tool_result_table_bytes: usize,
    /// The runs-service binary that runs queries (`query-worker`); by
    /// default the running one.
    #[arg(
        long = "data-source-query-worker",
        env = "SWITCHBOARD_DATA_SOURCE_QUERY_WORKER"
    )]
    pub query_worker: Option<std::path::PathBuf>,
    /// Where the tables are kept: the database, or an object store.
    #[command(flatten)]
    pub store: ObjectStoreArgs,
}

impl Default for DataSourceArgs {
    fn default() -> Self {
        let (import, query, capacity) = (
            ImportLimits::default(),
            QueryLimits::default(),
            Capacity::default(),
        );
        Self {
            max_csv_bytes: import.max_bytes,
            max_cells: import.max_cells,
            cache_bytes: capacity.cache_bytes,
            query_memory_bytes: query.memory_bytes,
            concurrent_work: capacity.concurrent_work,
            concurrent_work_per_org: capacity.concurrent_work_per_org,
            queued_per_org: capacity.queued_per_org,
            org_bytes: capacity.org_bytes,
            threads: None,
            nice: capacity.nice,
            sched_idle: capacity.sched_idle,
            piece_bytes: capacity.piece_bytes,
            query_max_result_bytes: query.max_result_bytes,
            query_max_value_bytes: query.max_value_bytes,
            query_max_memory_bytes: query.process_memory_bytes,
            tool_result_table_bytes: DEFAULT_TABLE_BYTES,
            query_worker: None,
            store: ObjectStoreArgs::default(),
        }
    }
}

impl DataSourceArgs {
    /// Refuses settings that contradict each other or the server's.
    pub fn check(&self, max_message_bytes: usize) -> anyhow::Result<()> {
        ensure!(
            self.max_csv_bytes < max_message_bytes,
            "SWITCHBOARD_DATA_SOURCE_MAX_CSV_BYTES ({}) must be below SWITCHBOARD_MAX_MESSAGE_BYTES \
             ({max_message_bytes}): a larger CSV could never arrive",
            self.max_csv_bytes
        );
        ensure!(
            self.concurrent_work_per_org >= 1
                && self.concurrent_work_per_org < self.concurrent_work.max(2),
            "SWITCHBOARD_DATA_SOURCE_CONCURRENT_WORK_PER_ORG ({}) must be at least 1 and below \
             SWITCHBOARD_DATA_SOURCE_CONCURRENT_WORK ({}), so that one organization never holds every slot",
            self.concurrent_work_per_org,
            self.concurrent_work
        );
        ensure!(
            self.threads
                .is_none_or(|threads| (1..=MAX_THREADS).contains(&threads)),
            "SWITCHBOARD_DATA_SOURCE_THREADS ({}) must be between 1 and {MAX_THREADS}",
            self.threads.unwrap_or_default()
        );
        ensure!(
            (0..=MAX_NICE).contains(&self.nice),
            "SWITCHBOARD_DATA_SOURCE_NICE ({}) must be between 0 and {MAX_NICE}",
            self.nice
        );
        ensure!(
            (1..=self.max_csv_bytes.max(1)).contains(&self.piece_bytes),
            "SWITCHBOARD_DATA_SOURCE_PIECE_BYTES ({}) must be between 1 and \
             SWITCHBOARD_DATA_SOURCE_MAX_CSV_BYTES ({}): a larger piece is a whole import",
            self.piece_bytes,
            self.max_csv_bytes
        );
        ensure!(
            self.query_max_memory_bytes > self.query_memory_bytes,
            "SWITCHBOARD_DATA_SOURCE_QUERY_MAX_MEMORY_BYTES ({}) must be above \
             SWITCHBOARD_DATA_SOURCE_QUERY_MEMORY_BYTES ({}): the query's process holds its engine's memory and more",
            self.query_max_memory_bytes,
            self.query_memory_bytes
        );
        ensure!(
            self.tool_result_table_bytes >= MIN_TABLE_BYTES,
            "SWITCHBOARD_TOOL_RESULT_TABLE_BYTES ({}) must be at least {MIN_TABLE_BYTES}: \
             shorter, and ordinary tool results would be stored or cut",
            self.tool_result_table_bytes
        );
        Ok(())
    }

    /// The import limits.
    pub fn import_limits(&self) -> ImportLimits {
        ImportLimits {
            max_bytes: self.max_csv_bytes,
            max_cells: self.max_cells,
            ..ImportLimits::default()
        }
    }

    /// The limits of one query.
    pub fn query_limits(&self) -> QueryLimits {
        QueryLimits {
            memory_bytes: self.query_memory_bytes,
            max_result_bytes: self.query_max_result_bytes,
            max_value_bytes: self.query_max_value_bytes,
            process_memory_bytes: self.query_max_memory_bytes,
            ..QueryLimits::default()
        }
    }

    /// What all data sources may hold and run at once.
    pub fn capacity(&self) -> Capacity {
        Capacity {
            cache_bytes: self.cache_bytes,
            concurrent_work: self.concurrent_work,
            concurrent_work_per_org: self.concurrent_work_per_org,
            queued_per_org: self.queued_per_org,
            org_bytes: self.org_bytes,
            threads: self.threads.unwrap_or_else(Capacity::default_threads),
            nice: self.nice,
            sched_idle: self.sched_idle,
            piece_bytes: self.piece_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::config::Config;

    #[test]
    fn the_import_piece_size_is_checked_between_one_byte_and_the_largest_csv() {
        let defaults = Config::try_parse_from(["runs-service"]).expect("defaults parse");
        assert_eq!(defaults.data_sources.capacity().piece_bytes, 64 * 1024);
        let message_bytes = 16 * 1024 * 1024;
        let at = |piece_bytes: usize| DataSourceArgs {
            piece_bytes,
            ..DataSourceArgs::default()
        };
        at(1).check(message_bytes).expect("a byte a piece");
        let most = DataSourceArgs::default().max_csv_bytes;
        at(most)
            .check(message_bytes)
            .expect("a whole import a piece");
        for piece_bytes in [0, most + 1] {
            let error = at(piece_bytes)
                .check(message_bytes)
                .expect_err("out of range");
            assert!(
                error
                    .to_string()
                    .contains("SWITCHBOARD_DATA_SOURCE_PIECE_BYTES"),
                "{error}"
            );
        }
        let set = Config::try_parse_from(["runs-service", "--data-source-piece-bytes", "4096"])
            .expect("parsed");
        assert_eq!(set.data_sources.capacity().piece_bytes, 4096);
    }
}
