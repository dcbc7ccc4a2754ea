//! Read-only SQL over one thread's tables with DataFusion, in the query's
//! worker process (`worker.rs`).
//!
//! Each query gets a fresh session whose catalog holds only the tables the
//! query names (decoded when the planner asks for them, or, for a table in a
//! store, scanned from its object row group by row group), no object store
//! but the tables' (under a host name no query can write, since the gate
//! refuses every file and URL), no spill files, and a memory pool of its
//! own. The text passes the gate (`gate.rs`) and the function list
//! (`allowlist.rs`); the plan is checked again for DDL, DML, statements and
//! unlisted functions, and its growing functions are bounded, before
//! anything runs.

use std::{
    any::Any,
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anyhow::Context as _;
use async_trait::async_trait;
use bytes::Bytes;
use datafusion::datasource::{
    file_format::parquet::ParquetFormat,
    listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl},
};
use datafusion::{
    arrow::{
        record_batch::RecordBatch,
        util::display::{ArrayFormatter, FormatOptions},
    },
    catalog::{CatalogProvider, MemTable, MemoryCatalogProvider, SchemaProvider, TableProvider},
    common::tree_node::{Transformed, TreeNode as _},
    error::DataFusionError,
    execution::{
        disk_manager::{DiskManagerBuilder, DiskManagerMode},
        memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation},
        object_store::ObjectStoreRegistry,
        runtime_env::{RuntimeEnv, RuntimeEnvBuilder},
    },
    logical_expr::LogicalPlan,
    object_store::ObjectStore,
    physical_plan::{ExecutionPlan, coop::CooperativeExec, execute_stream},
    prelude::{SQLOptions, SessionConfig, SessionContext},
    sql::parser::Statement as DfStatement,
};
use futures::StreamExt as _;
use url::Url;

use super::{
    Stored, allowlist,
    bounded::{self, ValueLimits},
    codec::{self, LoadedTable},
    gate,
};
use crate::domain::{
    datasource::{QueryError, QueryLimits, QueryResult, Refusal},
    texts::rendered_line_bytes,
};

/// The host of the URL the tables' store is registered under.
const TABLES_HOST: &str = "switchboard-tables";

/// Plans and runs `sql` over `tables` (table name → stored bytes or
/// object), the objects read from `store`.
pub(super) async fn execute(
    tables: HashMap<String, Stored>,
    store: Option<Arc<dyn ObjectStore>>,
    sql: &str,
    limits: QueryLimits,
    partitions: usize,
) -> Result<QueryResult, QueryError> {
    let statement = gate::check_statement(sql)?;
    allowlist::check_statement(&statement)?;
    let failure = Arc::new(Mutex::new(None));
    let runtime = query_runtime(&limits, store).map_err(QueryError::Internal)?;
    let schema = Arc::new(ThreadSchema {
        tables,
        partitions,
        failure: Arc::clone(&failure),
        pool: Arc::clone(&runtime.memory_pool),
        decoded: Mutex::new(HashMap::new()),
        reservations: Mutex::new(HashMap::new()),
        objects: Mutex::new(HashMap::new()),
    });
    let outcome = plan_and_collect(schema, runtime, statement, &limits, partitions).await;
    // A table that failed to decode surfaces as an engine error; it is ours.
    let load_failure = failure
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match (outcome, load_failure) {
        (Err(_), Some(error)) => Err(QueryError::Internal(error)),
        (outcome, _) => outcome,
    }
}

async fn plan_and_collect(
    schema: Arc<ThreadSchema>,
    runtime: Arc<RuntimeEnv>,
    statement: DfStatement,
    limits: &QueryLimits,
    partitions: usize,
) -> Result<QueryResult, QueryError> {
    let ctx = session(Arc::clone(&schema), runtime, partitions).map_err(QueryError::Internal)?;
    schema
        .open_objects(&ctx)
        .await
        .map_err(QueryError::Internal)?;
    let engine = |e: DataFusionError| QueryError::Engine(e.strip_backtrace());
    let plan = checked_plan(&ctx, statement, limits).await?;
    // One row more than shown tells whether the result was cut; the limit
    // also lets the engine sort with a bounded top-k instead of everything.
    let frame = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(engine)?
        .limit(0, Some(limits.max_rows.saturating_add(1)))
        .map_err(engine)?;
    let plan = cooperative(frame.create_physical_plan().await.map_err(engine)?).map_err(engine)?;
    let mut stream = execute_stream(plan, ctx.task_ctx()).map_err(engine)?;
    let columns: Vec<String> = stream
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let header_bytes = rendered_line_bytes(&columns);
    if header_bytes > limits.max_result_bytes {
        return Err(QueryError::Refused(Refusal::HeaderTooLarge {
            columns: columns.len(),
            bytes: header_bytes,
            limit: limits.max_result_bytes,
        }));
    }
    let mut collector = Collector {
        result: QueryResult {
            columns,
            rows: Vec::new(),
            truncated: false,
        },
        bytes: header_bytes,
    };
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(engine)?;
        if !collector.append(&batch, limits) {
            collector.result.truncated = true;
            break;
        }
    }
    // Dropping the stream stops whatever the engine still had running.
    drop(stream);
    Ok(collector.result)
}

/// The plan of `statement`, refused when it is not read-only or calls a
/// function off the list, with its growing functions bounded.
async fn checked_plan(
    ctx: &SessionContext,
    statement: DfStatement,
    limits: &QueryLimits,
) -> Result<LogicalPlan, QueryError> {
    let engine = |e: DataFusionError| QueryError::Engine(e.strip_backtrace());
    let plan = ctx
        .state()
        .statement_to_plan(statement)
        .await
        .map_err(engine)?;
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
        .verify_plan(&plan)
        .map_err(|e| QueryError::Refused(Refusal::NotAllowed(e.strip_backtrace())))?;
    allowlist::check_plan(&plan)?;
    // Before anything is evaluated, constant folding included.
    let value_limits = ValueLimits {
        per_value: limits.max_value_bytes as u64,
        per_call: limits.call_bytes() as u64,
    };
    bounded::bound_plan(plan, value_limits).map_err(engine)
}

/// `plan` with every operator's output passing through [`CooperativeExec`].
///
/// The engine marks only its scans as cooperative, so an operator that makes
/// many batches from few inputs (a cross join) could run for minutes without
/// giving its thread back; then neither the time limit nor cancellation
/// would take effect. Each wrapped edge spends the task's scheduling budget,
/// so the query yields every few batches wherever the work happens.
fn cooperative(plan: Arc<dyn ExecutionPlan>) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        if (node.as_ref() as &dyn Any).is::<CooperativeExec>() {
            return Ok(Transformed::no(node));
        }
        Ok(Transformed::yes(
            Arc::new(CooperativeExec::new(node)) as Arc<dyn ExecutionPlan>
        ))
    })
    .map(|transformed| transformed.data)
}

/// The rows rendered so far and the bytes they take as text.
struct Collector {
    result: QueryResult,
    bytes: usize,
}

impl Collector {
    /// Renders `batch`'s rows; false once more rows arrived than the row or
    /// byte limit allows.
    fn append(&mut self, batch: &RecordBatch, limits: &QueryLimits) -> bool {
        let options = FormatOptions::default().with_null("NULL");
        let formatters: Result<Vec<_>, _> = batch
            .columns()
            .iter()
            .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
            .collect();
        let formatters = match formatters {
            Ok(formatters) => formatters,
            Err(error) => {
                // A type without a text form: say so in the cells rather than fail.
                let message = format!("(cannot display: {error})");
                let row = vec![message; batch.num_columns()];
                return (0..batch.num_rows()).all(|_| self.push(row.clone(), limits));
            }
        };
        (0..batch.num_rows()).all(|row| {
            let cells = formatters
                .iter()
                .map(|f| cut(f.value(row).to_string(), limits.max_cell_chars))
                .collect();
            self.push(cells, limits)
        })
    }

    /// Keeps `row` if the limits allow one more.
    fn push(&mut self, row: Vec<String>, limits: &QueryLimits) -> bool {
        let bytes = rendered_line_bytes(&row);
        if self.result.rows.len() >= limits.max_rows
            || self.bytes.saturating_add(bytes) > limits.max_result_bytes
        {
            return false;
        }
        self.bytes += bytes;
        self.result.rows.push(row);
        true
    }
}

/// `text` cut to `max_chars` characters, marked with `…` when cut.
fn cut(text: String, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => {
            let mut cut = text[..at].to_owned();
            cut.push('…');
            cut
        }
        None => text,
    }
}

/// The memory pool and environment of one query: a limit of its own, no
/// spill files, no object stores.
fn query_runtime(
    limits: &QueryLimits,
    store: Option<Arc<dyn ObjectStore>>,
) -> anyhow::Result<Arc<RuntimeEnv>> {
    Ok(RuntimeEnvBuilder::new()
        .with_memory_limit(limits.memory_bytes, 1.0)
        .with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled),
        )
        .with_object_store_registry(Arc::new(TablesOnly { store }))
        .build_arc()?)
}

/// A session that sees only `schema`, reads no files and spills nothing.
fn session(
    schema: Arc<ThreadSchema>,
    runtime: Arc<RuntimeEnv>,
    partitions: usize,
) -> anyhow::Result<SessionContext> {
    let mut config = SessionConfig::new()
        .with_create_default_catalog_and_schema(false)
        .with_default_catalog_and_schema("datafusion", "public")
        .with_information_schema(false)
        .with_target_partitions(partitions);
    // Refused in the text already when at the top; this catches nested ones.
    config.options_mut().execution.enable_recursive_ctes = false;
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    allowlist::restrict_table_functions(&ctx);
    let catalog = MemoryCatalogProvider::new();
    catalog.register_schema("public", schema)?;
    ctx.register_catalog("datafusion", Arc::new(catalog));
    Ok(ctx)
}

/// An object store registry with the tables' store only (if they are in
/// one), under `s3://switchboard-tables`; nothing can be registered.
#[derive(Debug)]
struct TablesOnly {
    store: Option<Arc<dyn ObjectStore>>,
}

impl ObjectStoreRegistry for TablesOnly {
    fn register_store(
        &self,
        _url: &Url,
        _store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        None
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        match &self.store {
            Some(store) if url.scheme() == "s3" && url.host_str() == Some(TABLES_HOST) => {
                Ok(Arc::clone(store))
            }
            _ => Err(DataFusionError::Plan(format!(
                "files and URLs cannot be read ({url}); query the thread's tables"
            ))),
        }
    }
}

/// The tables a query names, decoded when the planner asks for them.
#[derive(Debug)]
struct ThreadSchema {
    /// Table name → stored bytes or object.
    tables: HashMap<String, Stored>,
    /// The scans of the tables in a store, opened before planning.
    objects: Mutex<HashMap<String, Arc<dyn TableProvider>>>,
    partitions: usize,
    /// Why decoding a table failed, if it did.
    failure: Arc<Mutex<Option<anyhow::Error>>>,
    /// The query's memory pool, which counts the decoded tables it reads.
    pool: Arc<dyn MemoryPool>,
    /// Tables decoded so far, so that a self-join decodes once.
    decoded: Mutex<HashMap<String, Arc<LoadedTable>>>,
    /// What each table read counts in `pool`, until the query ends.
    reservations: Mutex<HashMap<String, MemoryReservation>>,
}

impl ThreadSchema {
    /// Opens a scan of each table held in a store: its schema comes from
    /// the object's footer; its rows are read row group by row group as
    /// the query runs, never the whole table at once.
    async fn open_objects(&self, ctx: &SessionContext) -> anyhow::Result<()> {
        let state = ctx.state();
        for (name, stored) in &self.tables {
            let Stored::Object { key, .. } = stored else {
                continue;
            };
            let url = ListingTableUrl::parse(format!("s3://{TABLES_HOST}/{key}"))
                .context("invalid table object key")?;
            // Partitions come from the session (`with_target_partitions`).
            let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
                .with_file_extension(".parquet");
            let config = ListingTableConfig::new(url)
                .with_listing_options(options)
                .infer_schema(&state)
                .await
                .with_context(|| format!("failed to open the table {name}"))?;
            let table = ListingTable::try_new(config)
                .with_context(|| format!("failed to open the table {name}"))?;
            self.objects
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.clone(), Arc::new(table));
        }
        Ok(())
    }

    /// Counts `table` in the query's memory pool, once per table.
    fn reserve(&self, name: &str, table: &LoadedTable) -> datafusion::error::Result<()> {
        let mut reservations = self
            .reservations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if reservations.contains_key(name) {
            return Ok(());
        }
        let reservation = MemoryConsumer::new(format!("table {name}")).register(&self.pool);
        reservation.try_grow(table.bytes).map_err(|_| {
            DataFusionError::ResourcesExhausted(format!(
                "the table {name} takes {} bytes in memory, more than this query has left",
                table.bytes
            ))
        })?;
        reservations.insert(name.to_owned(), reservation);
        Ok(())
    }

    /// The decoded table `name`, from this query's earlier decode or now.
    fn decode(&self, name: &str, content: &Bytes) -> anyhow::Result<Arc<LoadedTable>> {
        let mut decoded = self
            .decoded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(table) = decoded.get(name) {
            return Ok(Arc::clone(table));
        }
        let table = Arc::new(codec::load(content.clone(), self.partitions)?);
        decoded.insert(name.to_owned(), Arc::clone(&table));
        Ok(table)
    }
}

#[async_trait]
impl SchemaProvider for ThreadSchema {
    fn table_names(&self) -> Vec<String> {
        self.tables.keys().cloned().collect()
    }

    async fn table(&self, name: &str) -> datafusion::error::Result<Option<Arc<dyn TableProvider>>> {
        let content = match self.tables.get(name) {
            None => return Ok(None),
            Some(Stored::Object { .. }) => {
                let objects = self
                    .objects
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                return Ok(objects.get(name).cloned());
            }
            Some(Stored::Bytes(content)) => content,
        };
        let loaded = match self.decode(name, content) {
            Ok(loaded) => loaded,
            Err(error) => {
                let message = format!("{error:#}");
                *self
                    .failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(error);
                return Err(DataFusionError::Execution(message));
            }
        };
        self.reserve(name, &loaded)?;
        let table = MemTable::try_new(Arc::clone(&loaded.schema), loaded.partitions.clone())?;
        Ok(Some(Arc::new(table)))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.tables.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_are_cut_on_character_boundaries() {
        assert_eq!(cut("ééé".to_owned(), 2), "éé…");
        assert_eq!(cut("ab".to_owned(), 2), "ab");
    }
}
