//! Data sources in SQL (SQLite or PostgreSQL through `sqlx::Any`), queried
//! with DataFusion.
//!
//! An imported CSV is stored as one row of `data_sources`: its metadata and
//! the whole table as Parquet bytes, so that any replica can serve it and it
//! survives restarts. Decoded tables are kept in a bounded in-memory cache.
//! Queries run on a runtime of their own, so that a heavy query never holds
//! the threads that serve requests; database reads stay on the caller's
//! runtime, which owns the pool's connections.
//!
//! Memory: the cache holds at most [`Capacity::cache_bytes`]; each running
//! query at most [`QueryLimits::memory_bytes`], the decoded tables it reads
//! counted in; imports and queries share [`Capacity::concurrent_work`] slots,
//! at most [`Capacity::concurrent_work_per_org`] per organization.

mod bounded;
mod cache;
mod codec;
mod concat;
mod engine;
mod gate;
mod import;
mod slots;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use async_trait::async_trait;
use datafusion::arrow::record_batch::RecordBatch;
use sqlx::{AnyPool, Row, any::AnyRow};
use tokio::{runtime::Handle, task::JoinHandle};

use crate::domain::{
    datasource::{
        Capacity, Column, DataSource, DataSources, ImportError, ImportLimits, QueryError,
        QueryLimits, QueryResult,
    },
    entities::new_id,
};
use cache::{LoadedTable, TableCache};
use slots::{SlotError, Slots};

/// Stack of a query thread.
const QUERY_THREAD_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Tries at a unique table name when concurrent imports pick the same one.
const NAME_ATTEMPTS: usize = 8;

const METADATA_COLUMNS: &str = "id, thread_id, table_name, origin, integration_id, \
     columns_json, row_count, size_bytes, created_at";

/// [`DataSources`] over a SQL database.
#[derive(Debug)]
pub struct SqlDataSources {
    store: Arc<Store>,
    import: ImportLimits,
    limits: QueryLimits,
    /// Parallelism of a query: the machine's cores.
    partitions: usize,
    slots: Slots,
    /// The most CSV bytes one organization's data sources may hold.
    org_bytes: u64,
    runtime: Mutex<Option<Arc<QueryRuntime>>>,
}

impl SqlDataSources {
    /// Data sources in `pool`, whose schema [`crate::outbound::sql::MIGRATIONS`]
    /// created, within `import` and `query` limits.
    /// The [`Capacity`] is the default one.
    pub fn new(pool: AnyPool, import: ImportLimits, query: QueryLimits) -> Self {
        let capacity = Capacity::default();
        Self {
            store: Arc::new(Store {
                pool,
                cache: TableCache::new(capacity.cache_bytes),
            }),
            import,
            limits: query,
            partitions: std::thread::available_parallelism().map_or(2, usize::from),
            slots: Slots::new(capacity.concurrent_work, capacity.concurrent_work_per_org),
            org_bytes: capacity.org_bytes,
            runtime: Mutex::new(None),
        }
    }

    /// The same within `capacity`.
    pub fn with_capacity(self, capacity: Capacity) -> Self {
        Self {
            slots: Slots::new(capacity.concurrent_work, capacity.concurrent_work_per_org),
            org_bytes: capacity.org_bytes,
            ..self.with_cache_bytes(capacity.cache_bytes)
        }
    }

    /// The organization of `thread_id`, if the thread exists.
    async fn org_of(&self, thread_id: &str) -> anyhow::Result<Option<String>> {
        sqlx::query("SELECT org_id FROM threads WHERE id = $1")
            .bind(thread_id)
            .fetch_optional(&self.store.pool)
            .await
            .context("failed to read the thread's organization")?
            .map(|row| row.try_get("org_id"))
            .transpose()
            .context("failed to read the thread's organization")
    }

    /// The CSV bytes `org`'s data sources hold.
    async fn org_usage(&self, org: &str) -> anyhow::Result<u64> {
        let used: i64 = sqlx::query(
            "SELECT CAST(COALESCE(SUM(d.size_bytes), 0) AS BIGINT) AS used FROM data_sources d \
             JOIN threads t ON t.id = d.thread_id WHERE t.org_id = $1",
        )
        .bind(org)
        .fetch_one(&self.store.pool)
        .await
        .context("failed to read the organization's data source bytes")?
        .try_get("used")
        .context("failed to read the organization's data source bytes")?;
        Ok(u64::try_from(used).unwrap_or(0))
    }

    /// Refuses the import of `size` bytes when `org`'s data sources would
    /// hold more than the limit. Imports of one organization run at most
    /// [`Capacity::concurrent_work_per_org`] at once, so concurrent ones can
    /// pass it by at most that many files.
    async fn check_org_quota(&self, org: &str, size: usize) -> Result<(), ImportError> {
        let used = self.org_usage(org).await.map_err(ImportError::Storage)?;
        let size = size as u64;
        if used.saturating_add(size) > self.org_bytes {
            return Err(ImportError::OrgQuotaExceeded {
                limit: self.org_bytes,
                used,
                size,
            });
        }
        Ok(())
    }

    /// The same, keeping at most `bytes` of decoded tables in memory.
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.store = Arc::new(Store {
            pool: self.store.pool.clone(),
            cache: TableCache::new(bytes),
        });
        self
    }

    /// The runtime queries run on, started on first use.
    fn runtime(&self) -> anyhow::Result<Arc<QueryRuntime>> {
        let mut slot = self
            .runtime
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(runtime) = slot.as_ref() {
            return Ok(Arc::clone(runtime));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.partitions)
            .thread_name("data-source-queries")
            // Planning walks expression trees recursively; the operator
            // limit bounds their depth, this leaves room for it in any build.
            .thread_stack_size(QUERY_THREAD_STACK_BYTES)
            .enable_time()
            .build()
            .context("failed to start the query runtime")?;
        let runtime = Arc::new(QueryRuntime(Some(runtime)));
        *slot = Some(Arc::clone(&runtime));
        Ok(runtime)
    }

    async fn insert(
        &self,
        source: &DataSource,
        name: &str,
        content: &[u8],
    ) -> anyhow::Result<String> {
        let columns_json =
            serde_json::to_string(&source.columns).context("failed to encode columns")?;
        for _ in 0..NAME_ATTEMPTS {
            let taken: HashSet<String> =
                sqlx::query("SELECT table_name FROM data_sources WHERE thread_id = $1")
                    .bind(source.thread_id.as_str())
                    .fetch_all(&self.store.pool)
                    .await
                    .context("failed to read the thread's table names")?
                    .iter()
                    .map(|row| row.try_get("table_name"))
                    .collect::<Result<_, _>>()?;
            let table_name = import::table_name(name, &taken);
            let inserted = sqlx::query(
                "INSERT INTO data_sources (id, thread_id, table_name, origin, integration_id, \
                 columns_json, row_count, size_bytes, content, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(source.id.as_str())
            .bind(source.thread_id.as_str())
            .bind(table_name.as_str())
            .bind(source.origin.as_str())
            .bind(source.integration_id.as_deref())
            .bind(columns_json.as_str())
            .bind(source.row_count)
            .bind(source.size_bytes)
            .bind(content)
            .bind(source.created_at)
            .execute(&self.store.pool)
            .await;
            match inserted {
                Ok(_) => return Ok(table_name),
                // Another import took the name in between: pick again.
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {}
                Err(error) => {
                    return Err(anyhow::Error::new(error).context("failed to insert a data source"));
                }
            }
        }
        anyhow::bail!("no unique table name found after {NAME_ATTEMPTS} tries")
    }
}

/// Stored tables and the cache of decoded ones.
#[derive(Debug)]
struct Store {
    pool: AnyPool,
    cache: TableCache,
}

impl Store {
    /// The decoded table of data source `id`, from the cache or the database
    /// (read on `io`, the runtime that owns the pool's connections).
    async fn load(
        &self,
        id: &str,
        partitions: usize,
        io: &Handle,
    ) -> anyhow::Result<Arc<LoadedTable>> {
        if let Some(table) = self.cache.get(id) {
            return Ok(table);
        }
        let pool = self.pool.clone();
        let owned_id = id.to_owned();
        let content: Vec<u8> = io
            .spawn(async move {
                sqlx::query("SELECT content FROM data_sources WHERE id = $1")
                    .bind(owned_id)
                    .fetch_optional(&pool)
                    .await
                    .context("failed to read a data source")?
                    .context("the data source was deleted")?
                    .try_get("content")
                    .context("failed to read a data source")
            })
            .await
            .context("reading a data source stopped")??;
        let table = tokio::task::spawn_blocking(move || -> anyhow::Result<LoadedTable> {
            let (schema, batches) = codec::decode(content)?;
            let bytes = batches.iter().map(RecordBatch::get_array_memory_size).sum();
            Ok(LoadedTable::new(schema, batches, partitions, bytes))
        })
        .await
        .context("decoding a table stopped")??;
        let table = Arc::new(table);
        self.cache.insert(id, Arc::clone(&table));
        Ok(table)
    }
}

/// A tokio runtime for queries, shut down without waiting when dropped (it may
/// be dropped inside another runtime, where waiting is not allowed).
#[derive(Debug)]
struct QueryRuntime(Option<tokio::runtime::Runtime>);

impl QueryRuntime {
    fn handle(&self) -> anyhow::Result<&Handle> {
        self.0
            .as_ref()
            .map(tokio::runtime::Runtime::handle)
            .context("the query runtime has stopped")
    }
}

impl Drop for QueryRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Aborts the task when the caller stops waiting for it.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Parses `csv` as an import does, without storing it: the columns and the
/// number of rows an import of it would give, or why it would be refused.
/// (The parse-only fuzz target reaches the import's parser through this.)
pub fn parse_csv(csv: &[u8], limits: &ImportLimits) -> Result<(Vec<Column>, usize), ImportError> {
    import::parse_csv(csv, limits).map(|parsed| (parsed.columns, parsed.batch.num_rows()))
}

/// Parses and encodes a CSV off the async workers: both are CPU work.
async fn parse_and_encode(
    bytes: Vec<u8>,
    limits: ImportLimits,
) -> Result<(import::ParsedTable, Vec<u8>), ImportError> {
    tokio::task::spawn_blocking(move || {
        let parsed = import::parse_csv(&bytes, &limits)?;
        let content = codec::encode(&parsed.batch).map_err(ImportError::Storage)?;
        Ok::<_, ImportError>((parsed, content))
    })
    .await
    .map_err(|e| ImportError::Storage(anyhow::Error::new(e).context("the import stopped")))?
}

impl SqlDataSources {
    /// Keeps a just-imported table in the cache, in query-sized batches.
    fn cache_imported(&self, source_id: &str, batch: &RecordBatch) {
        let row_count = batch.num_rows();
        let bytes = batch.get_array_memory_size();
        let batches = (0..row_count)
            .step_by(codec::BATCH_ROWS)
            .map(|start| batch.slice(start, codec::BATCH_ROWS.min(row_count - start)))
            .collect();
        self.store.cache.insert(
            source_id,
            Arc::new(LoadedTable::new(
                batch.schema(),
                batches,
                self.partitions,
                bytes,
            )),
        );
    }
}

fn decode_source(row: &AnyRow) -> anyhow::Result<DataSource> {
    let columns_json: String = row.try_get("columns_json")?;
    let columns: Vec<Column> =
        serde_json::from_str(&columns_json).context("stored columns are not valid")?;
    Ok(DataSource {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        table_name: row.try_get("table_name")?,
        origin: row.try_get("origin")?,
        integration_id: row.try_get("integration_id")?,
        columns,
        row_count: row.try_get("row_count")?,
        size_bytes: row.try_get("size_bytes")?,
        created_at: row.try_get("created_at")?,
    })
}

#[async_trait]
impl DataSources for SqlDataSources {
    async fn import_csv(
        &self,
        thread_id: &str,
        name: &str,
        origin: &str,
        integration_id: Option<&str>,
        csv: &[u8],
    ) -> Result<DataSource, ImportError> {
        // Refused before the bytes are copied.
        if csv.len() > self.import.max_bytes {
            return Err(ImportError::TooLarge {
                limit: self.import.max_bytes,
                actual: csv.len(),
            });
        }
        let org = self
            .org_of(thread_id)
            .await
            .map_err(ImportError::Storage)?
            .ok_or_else(|| ImportError::Storage(anyhow::anyhow!("the thread does not exist")))?;
        // Parsing and encoding take memory and CPU like a query.
        let _slot = self
            .slots
            .acquire(&org, self.limits.timeout)
            .await
            .map_err(|e| ImportError::Busy(e.message("import")))?;
        self.check_org_quota(&org, csv.len()).await?;
        let (parsed, content) = parse_and_encode(csv.to_vec(), self.import).await?;

        let row_count = parsed.batch.num_rows();
        let mut source = DataSource {
            id: new_id(),
            thread_id: thread_id.to_owned(),
            table_name: String::new(),
            origin: origin.to_owned(),
            integration_id: integration_id.map(str::to_owned),
            columns: parsed.columns,
            row_count: i64::try_from(row_count).unwrap_or(i64::MAX),
            size_bytes: i64::try_from(csv.len()).unwrap_or(i64::MAX),
            created_at: switchboard_db::now_millis(),
        };
        source.table_name = self
            .insert(&source, name, &content)
            .await
            .map_err(ImportError::Storage)?;

        // The model usually queries a table right after importing it.
        self.cache_imported(&source.id, &parsed.batch);
        tracing::info!(
            thread_id,
            table = %source.table_name,
            rows = row_count,
            csv_bytes = csv.len(),
            stored_bytes = content.len(),
            "data source imported"
        );
        Ok(source)
    }

    async fn list(&self, thread_id: &str) -> Result<Vec<DataSource>, anyhow::Error> {
        sqlx::query(&format!(
            "SELECT {METADATA_COLUMNS} FROM data_sources WHERE thread_id = $1 \
             ORDER BY created_at, id"
        ))
        .bind(thread_id)
        .fetch_all(&self.store.pool)
        .await
        .context("failed to list data sources")?
        .iter()
        .map(decode_source)
        .collect()
    }

    async fn query(&self, thread_id: &str, sql: &str) -> Result<QueryResult, QueryError> {
        let statement = gate::check_statement(sql)?;
        let limits = self.limits;
        // A thread that no longer exists has no tables; the engine says so.
        let org = self
            .org_of(thread_id)
            .await
            .map_err(QueryError::Internal)?
            .unwrap_or_else(|| thread_id.to_owned());
        let _slot = self
            .slots
            .acquire(&org, limits.timeout)
            .await
            .map_err(|e: SlotError| QueryError::Refused(e.message("query")))?;
        let tables: HashMap<String, String> =
            sqlx::query("SELECT id, table_name FROM data_sources WHERE thread_id = $1")
                .bind(thread_id)
                .fetch_all(&self.store.pool)
                .await
                .context("failed to read the thread's data sources")
                .map_err(QueryError::Internal)?
                .iter()
                .map(|row| Ok((row.try_get("table_name")?, row.try_get("id")?)))
                .collect::<Result<_, sqlx::Error>>()
                .map_err(|e| QueryError::Internal(e.into()))?;

        let io = Handle::try_current()
            .context("queries run inside a tokio runtime")
            .map_err(QueryError::Internal)?;
        let runtime = self.runtime().map_err(QueryError::Internal)?;
        let store = Arc::clone(&self.store);
        let partitions = self.partitions;
        let task = runtime
            .handle()
            .map_err(QueryError::Internal)?
            .spawn(async move {
                tokio::time::timeout(
                    limits.timeout,
                    engine::run(store, io, tables, statement, limits, partitions),
                )
                .await
                .unwrap_or(Err(QueryError::Timeout(limits.timeout)))
            });
        let mut task = AbortOnDrop(task);
        // The query's own timer normally ends it; this one answers even if a
        // step of the engine were to hold its thread past the limit.
        match tokio::time::timeout(limits.timeout + Duration::from_secs(1), &mut task.0).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => Err(QueryError::Internal(
                anyhow::Error::new(join).context("the query task failed"),
            )),
            Err(_) => Err(QueryError::Timeout(limits.timeout)),
        }
    }
}
