//! Data sources in SQL (SQLite or PostgreSQL through `sqlx::Any`), queried
//! with DataFusion.
//!
//! An imported CSV is stored as one row of `data_sources`: its metadata and
//! the whole table as Parquet bytes, so that any replica can serve it and it
//! survives restarts. Stored tables are kept in a bounded in-memory cache.
//!
//! With an object store set (`objects.rs`), the table's Parquet is instead
//! uploaded to an S3-compatible store and the row keeps only the metadata
//! and the object's key; the query's worker scans the object row group by
//! row group, so neither the service nor the worker holds such a table
//! whole, and the cache is not used for it. Rows from before a store was
//! set keep their bytes and stay readable. Deleting a thread deletes its
//! objects after its rows, with a record that a sweep finishes from
//! (`sweeps.rs`; `objects.rs` says why in that order).
//! Each query runs in a worker process of its own (`worker.rs`), which is
//! killed when its time is up, so that no query holds the service's threads
//! or memory past its answer.
//!
//! Memory: the cache holds at most [`Capacity::cache_bytes`]; each running
//! query's process at most [`QueryLimits::process_memory_bytes`], of which
//! the engine's pool counts [`QueryLimits::memory_bytes`] (the decoded
//! tables it reads counted in); imports and queries share
//! [`Capacity::concurrent_work`] slots, at most
//! [`Capacity::concurrent_work_per_org`] per organization.
//!
//! CPU: imports are parsed on [`Capacity::threads`] threads shared by all
//! organizations in fair turns (`pool.rs`); a query's process runs as many
//! threads. Both run below the priority of the threads that serve requests.

pub mod allowlist;
mod bounded;
mod cache;
mod child;
mod codec;
mod concat;
mod encoder;
mod engine;
mod gate;
mod import;
mod import_work;
mod importing;
mod objects;
mod pool;
mod priority;
mod protocol;
mod quota;
mod rows;
mod slots;
mod storing;
mod sweeps;
mod worker;

pub use child::run_query_worker;
pub use objects::{MIN_PART_BYTES, ObjectSettings, StoreAccess, TableObjects};
pub use worker::WORKER_SUBCOMMAND;

use std::{collections::HashMap, path::PathBuf, sync::Arc};

use anyhow::Context as _;
use async_trait::async_trait;
use bytes::Bytes;
use sqlx::AnyPool;

use crate::domain::{
    datasource::{
        Capacity, Column, DataSource, DataSources, ImportError, ImportLimits, QueryError,
        QueryLimits, QueryResult, Refusal,
    },
    ids::{IntegrationId, ThreadId},
};
use cache::TableCache;
use pool::CpuPool;
use priority::CpuPriority;
use rows::{METADATA_COLUMNS, Store, Stored, decode_source};
use slots::{Slot, Slots};
use storing::Storing;
use worker::QueryWorker;

/// [`DataSources`] over a SQL database.
#[derive(Debug)]
pub struct SqlDataSources {
    store: Arc<Store>,
    /// Where new tables go: the database (`None`) or a store of objects.
    objects: Option<Arc<TableObjects>>,
    import: ImportLimits,
    limits: QueryLimits,
    /// Where imports are parsed; its threads are also a query's
    /// parallelism, and its priority a query process's.
    pool: CpuPool,
    /// CSV bytes an import parses in one turn of the pool.
    piece_bytes: usize,
    slots: Slots,
    /// The most CSV bytes an organization's data sources hold (or its own).
    org_bytes: u64,
    own_org_bytes: HashMap<String, u64>,
    runner: Runner,
}

/// Where queries run.
#[derive(Debug, Clone)]
enum Runner {
    /// Each in a worker process of its own.
    Worker(QueryWorker),
    /// No worker program was found; says why.
    Missing(String),
    /// In this process: no memory ceiling, no kill.
    InProcess,
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
            objects: None,
            import,
            limits: query,
            pool: CpuPool::new(capacity.threads, CpuPriority::of(&capacity)),
            piece_bytes: capacity.piece_bytes,
            slots: Slots::new(
                capacity.concurrent_work,
                capacity.concurrent_work_per_org,
                capacity.queued_per_org,
            ),
            org_bytes: capacity.org_bytes,
            own_org_bytes: HashMap::new(),
            runner: QueryWorker::beside_current()
                .map_or_else(|e| Runner::Missing(format!("{e:#}")), Runner::Worker),
        }
    }

    /// The same, running each query in a process of the runs-service binary
    /// `program` (by default the running one, or one next to it).
    pub fn with_query_worker(self, program: PathBuf) -> Self {
        Self {
            runner: Runner::Worker(QueryWorker::new(program)),
            ..self
        }
    }

    /// The same, keeping new tables as objects in `objects` (their rows
    /// keep only metadata); tables already in the database stay readable.
    pub fn with_objects(self, objects: TableObjects) -> Self {
        Self {
            objects: Some(Arc::new(objects)),
            ..self
        }
    }

    /// The store of objects, if tables go to one.
    pub fn objects(&self) -> Option<&Arc<TableObjects>> {
        self.objects.as_ref()
    }

    /// The same, running queries in this process, without a memory ceiling
    /// and without a kill when their time is up: for fuzzing, where the
    /// fuzzer's own limits take their place. Never for a service.
    pub fn with_queries_in_process(self) -> Self {
        Self {
            runner: Runner::InProcess,
            ..self
        }
    }

    /// The same within `capacity`.
    pub fn with_capacity(self, capacity: Capacity) -> Self {
        Self {
            slots: Slots::new(
                capacity.concurrent_work,
                capacity.concurrent_work_per_org,
                capacity.queued_per_org,
            ),
            org_bytes: capacity.org_bytes,
            pool: CpuPool::new(capacity.threads, CpuPriority::of(&capacity)),
            piece_bytes: capacity.piece_bytes,
            ..self.with_cache_bytes(capacity.cache_bytes)
        }
    }

    /// Pieces of import work (a turn each) the data-source threads have run
    /// since the start: what an import that stopped part-way shows it
    /// stopped by.
    pub fn import_pieces_run(&self) -> u64 {
        self.pool.pieces_run()
    }

    /// The same, with a limit of data-source bytes of their own for the
    /// organizations `limits` names (the organization limits file).
    pub fn with_org_bytes(self, limits: impl IntoIterator<Item = (String, u64)>) -> Self {
        Self {
            own_org_bytes: limits.into_iter().collect(),
            ..self
        }
    }

    /// The same, keeping at most `bytes` of decoded tables in memory.
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.store = Arc::new(Store {
            pool: self.store.pool.clone(),
            cache: TableCache::new(bytes),
        });
        self
    }
}

/// Parses `csv` as an import does, without storing it: the columns and the
/// number of rows an import of it would give, or why it would be refused.
/// (The parse-only fuzz target reaches the import's parser through this.)
pub fn parse_csv(csv: &[u8], limits: &ImportLimits) -> Result<(Vec<Column>, usize), ImportError> {
    import::parse_csv(csv, limits).map(|parsed| (parsed.columns, parsed.batch.num_rows()))
}

impl SqlDataSources {
    /// What a query's worker needs to read the tables in the store, if
    /// one is set.
    async fn worker_store(&self) -> Result<Option<StoreAccess>, QueryError> {
        match &self.objects {
            Some(objects) => Ok(Some(
                objects
                    .worker_access()
                    .await
                    .map_err(QueryError::Internal)?,
            )),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl DataSources for SqlDataSources {
    async fn import_csv(
        &self,
        thread_id: ThreadId,
        name: &str,
        origin: &str,
        integration_id: Option<IntegrationId>,
        csv: Bytes,
    ) -> Result<DataSource, ImportError> {
        self.import(thread_id, name, origin, integration_id, csv)
            .await
    }

    async fn list(&self, thread_id: ThreadId) -> Result<Vec<DataSource>, anyhow::Error> {
        sqlx::query(&format!(
            "SELECT {METADATA_COLUMNS} FROM data_sources WHERE thread_id = $1 \
             ORDER BY created_at, id"
        ))
        .bind(thread_id.to_string())
        .fetch_all(&self.store.pool)
        .await
        .context("failed to list data sources")?
        .iter()
        .map(decode_source)
        .collect()
    }

    async fn query(&self, thread_id: ThreadId, sql: &str) -> Result<QueryResult, QueryError> {
        let statement = gate::check_statement(sql)?;
        let named = allowlist::check_statement(&statement)?;
        let limits = self.limits;
        // A thread that no longer exists has no tables; the engine says so.
        let org = self
            .org_of(thread_id)
            .await
            .map_err(QueryError::Internal)?
            .unwrap_or_else(|| thread_id.to_string());
        let slot = self
            .slots
            .acquire(&org, limits.timeout)
            .await
            .map_err(|busy| QueryError::Refused(Refusal::Busy(busy)))?;
        let tables = self
            .named_tables(thread_id, &named)
            .await
            .map_err(QueryError::Internal)?;
        // A query runs in a process of its own, which the kernel shares the
        // cores with fairly (a long query holds no turn of the pool), below
        // the service's priority and with as many threads as the pool.
        let partitions = self.pool.threads();
        match &self.runner {
            Runner::Worker(worker) => {
                let store = self.worker_store().await?;
                let request = protocol::Request {
                    sql: sql.to_owned(),
                    limits: (&limits).into(),
                    partitions,
                    priority: self.pool.priority().nice,
                    idle: self.pool.priority().idle,
                    store,
                    tables: tables
                        .iter()
                        .map(|(name, stored)| protocol::TableHeader::of(name, stored))
                        .collect(),
                };
                let contents = tables
                    .into_iter()
                    .filter_map(|(_, stored)| match stored {
                        Stored::Bytes(content) => Some(content),
                        Stored::Object { .. } => None,
                    })
                    .collect();
                run_in_worker(worker.clone(), thread_id, request, contents, limits, slot).await
            }
            Runner::Missing(why) => Err(QueryError::Internal(anyhow::anyhow!(why.clone()))),
            Runner::InProcess => {
                let tables = tables.into_iter().collect();
                let store = self.objects.as_ref().map(|objects| objects.store());
                tokio::time::timeout(
                    limits.timeout,
                    engine::execute(tables, store, sql, limits, partitions),
                )
                .await
                .unwrap_or(Err(QueryError::Timeout(limits.timeout)))
            }
        }
    }

    async fn thread_deleting(&self, thread_id: ThreadId) -> Result<(), anyhow::Error> {
        self.mark_for_sweep(thread_id).await
    }

    async fn thread_deleted(&self, thread_id: ThreadId) {
        self.delete_thread_objects(thread_id).await;
    }
}

/// Runs the query in `worker` on a task of its own that holds `slot` until
/// the worker process has ended, also when the caller stops waiting (which
/// kills the process).
async fn run_in_worker(
    worker: QueryWorker,
    thread_id: ThreadId,
    request: protocol::Request,
    contents: Vec<Bytes>,
    limits: QueryLimits,
    slot: Slot,
) -> Result<QueryResult, QueryError> {
    let (mut answer, outcome) = tokio::sync::oneshot::channel();
    let label = thread_id.to_string();
    tokio::spawn(async move {
        let result = worker
            .run(&label, &request, &contents, &limits, answer.closed())
            .await;
        // Given back only now: the worker has ended and been reaped.
        drop(slot);
        let _ = answer.send(result);
    });
    outcome.await.unwrap_or_else(|_| {
        Err(QueryError::Internal(anyhow::anyhow!(
            "the query's task stopped"
        )))
    })
}
