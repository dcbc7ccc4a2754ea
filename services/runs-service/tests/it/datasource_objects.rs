//! Data sources kept in an S3-compatible store (a real SeaweedFS, started
//! per test from `.tools/bin/weed`, which `scripts/ensure-seaweedfs.sh`
//! installs): the row keeps only metadata, queries read the object through
//! the worker process, deleting the thread deletes its objects, and a table
//! larger than the query's memory streams where the database's storage,
//! which loads the whole table, fails.
//!
//! The size of the large table and the worker's ceiling can be set with
//! `SWITCHBOARD_OBJSTORE_CSV_MB` and `SWITCHBOARD_OBJSTORE_CEILING_MB`
//! (`make objstore-1g` runs 1 GB at 512 MiB in a release build).

use std::{
    fmt::Write as _,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures::TryStreamExt as _;
use object_store::{ObjectStore, ObjectStoreExt as _, path::Path as ObjectPath};
use sqlx::Row as _;
use switchboard_auth::Principal;
use switchboard_runs_service::{
    domain::{
        datasource::{Capacity, DataSource, DataSources, ImportLimits, QueryError, QueryLimits},
        ids::ThreadId,
        ports::RunsRepository,
        service::RunsService,
    },
    outbound::{
        datasource::{ObjectSettings, SqlDataSources, StoreAccess, TableObjects},
        sql::SqlRunsRepository,
    },
};
use switchboard_test_support::{
    TestDb,
    seaweedfs::{ACCESS_KEY_ID, SECRET_ACCESS_KEY, SeaweedFs},
};

const BUCKET: &str = "switchboard-tables";

/// How the tests reach `server`, and the settings of the service's store.
pub(crate) fn settings(endpoint: &str) -> ObjectSettings {
    ObjectSettings {
        url: format!("s3://{BUCKET}/test").parse().expect("a URL"),
        access: StoreAccess {
            bucket: BUCKET.to_owned(),
            endpoint: Some(endpoint.to_owned()),
            region: Some("us-east-1".to_owned()),
            access_key_id: Some(ACCESS_KEY_ID.to_owned()),
            secret_access_key: Some(SECRET_ACCESS_KEY.to_owned()),
            session_token: None,
            allow_http: true,
            renewing: Vec::new(),
        },
        part_bytes: 5 * 1024 * 1024,
        concurrent_parts: 2,
    }
}

pub(crate) struct Fixture {
    _db: TestDb,
    pub(crate) server: SeaweedFs,
    pool: sqlx::AnyPool,
    repo: Arc<SqlRunsRepository>,
    /// The bucket, as the tests list it.
    bucket: Arc<dyn ObjectStore>,
}

impl Fixture {
    pub(crate) async fn new() -> Self {
        let server = SeaweedFs::start(BUCKET).expect("SeaweedFS starts");
        let db = TestDb::sqlite().expect("a test database");
        let pool = crate::stores::migrated_pool(&db.url).await;
        let bucket = settings(&server.endpoint).access.open().expect("a client");
        wait_for_bucket(&bucket, &server).await;
        Self {
            _db: db,
            repo: Arc::new(SqlRunsRepository::new(pool.clone())),
            pool,
            server,
            bucket,
        }
    }

    /// Data sources kept in the store, within `query` limits.
    pub(crate) fn sources(&self, import: ImportLimits, query: QueryLimits) -> SqlDataSources {
        self.sources_in(&settings(&self.server.endpoint), import, query)
    }

    /// Data sources kept in the store `settings` name.
    pub(crate) fn sources_in(
        &self,
        settings: &ObjectSettings,
        import: ImportLimits,
        query: QueryLimits,
    ) -> SqlDataSources {
        SqlDataSources::new(self.pool.clone(), import, query)
            .with_capacity(Capacity {
                org_bytes: u64::MAX,
                ..Capacity::default()
            })
            .with_objects(TableObjects::new(settings).expect("a store"))
    }

    /// Data sources kept in the database, within `query` limits.
    fn database_sources(&self, import: ImportLimits, query: QueryLimits) -> SqlDataSources {
        SqlDataSources::new(self.pool.clone(), import, query).with_capacity(Capacity {
            org_bytes: u64::MAX,
            ..Capacity::default()
        })
    }

    /// A connection holding the database's write lock until it is rolled
    /// back: every row written meanwhile waits (within the pool's busy
    /// timeout, 5 s).
    pub(crate) async fn hold_writes(&self) -> sqlx::pool::PoolConnection<sqlx::Any> {
        let mut held = self.pool.acquire().await.expect("a connection");
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *held)
            .await
            .expect("the write lock");
        held
    }

    pub(crate) async fn thread(&self) -> ThreadId {
        crate::stores::stored_thread(self.repo.as_ref(), "org-a", "alice").await
    }

    /// The keys of the bucket's objects.
    pub(crate) async fn objects(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .bucket
            .list(None)
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .expect("the bucket lists");
        keys.sort();
        keys
    }
}

/// Waits until the bucket `weed mini` creates at its start answers.
async fn wait_for_bucket(bucket: &Arc<dyn ObjectStore>, server: &SeaweedFs) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed: Result<Vec<_>, _> = bucket
            .list(Some(&ObjectPath::from("x")))
            .try_collect()
            .await;
        match listed {
            Ok(_) => return,
            Err(error) if Instant::now() > deadline => {
                panic!(
                    "SeaweedFS's bucket never answered: {error}; log: {}",
                    server.log()
                )
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

fn principal(org: &str, user: &str) -> Principal {
    Principal::new(org, user, Vec::new())
}

pub(crate) fn small_limits() -> (ImportLimits, QueryLimits) {
    (
        ImportLimits::default(),
        QueryLimits {
            timeout: Duration::from_secs(30),
            ..QueryLimits::default()
        },
    )
}

/// Imports a small sales table into `thread` and checks its totals by
/// region, read through the query's worker; the data source.
pub(crate) async fn import_and_sum_sales(sources: &SqlDataSources, thread: ThreadId) -> DataSource {
    let source = sources
        .import_csv(
            thread,
            "sales.csv",
            "client",
            None,
            Bytes::from_static(b"region,amount\neu,10\nus,20\neu,5\n"),
        )
        .await
        .expect("imported");
    let result = sources
        .query(
            thread,
            "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region",
        )
        .await
        .expect("queried");
    assert_eq!(result.rows, [["eu", "15"], ["us", "20"]]);
    source
}

#[tokio::test]
async fn a_table_in_the_store_is_queried_and_its_row_holds_no_table_bytes() {
    let fx = Fixture::new().await;
    let (import, query) = small_limits();
    let sources = fx.sources(import, query);
    let thread = fx.thread().await;
    let source = import_and_sum_sales(&sources, thread).await;

    let row = sqlx::query(
        "SELECT LENGTH(content) AS stored, object_key, object_bytes FROM data_sources WHERE id = $1",
    )
    .bind(source.id.to_string())
    .fetch_one(&fx.pool)
    .await
    .expect("the row");
    let stored: i64 = row.try_get("stored").expect("stored");
    let key: String = row.try_get("object_key").expect("a key");
    let bytes: i64 = row.try_get("object_bytes").expect("a size");
    assert_eq!(stored, 0, "the row holds no table bytes");
    assert_eq!(key, format!("test/threads/{thread}/{}.parquet", source.id));
    assert_eq!(fx.objects().await, std::slice::from_ref(&key));
    let meta = fx
        .bucket
        .head(&ObjectPath::from(key.as_str()))
        .await
        .expect("the object");
    assert_eq!(meta.size, u64::try_from(bytes).expect("a size"));
    // The listing reads only the row.
    assert_eq!(sources.list(thread).await.expect("listed").len(), 1);
}

#[tokio::test]
async fn deleting_a_thread_deletes_its_objects_and_a_failed_deletion_is_swept() {
    let fx = Fixture::new().await;
    let (import, query) = small_limits();
    let sources: Arc<SqlDataSources> = Arc::new(fx.sources(import, query));
    let service = RunsService::new(fx.repo.clone(), Vec::new(), sources.clone());
    let alice = principal("org-a", "alice");
    let (kept, deleted) = (fx.thread().await, fx.thread().await);
    for (thread, name) in [(kept, "a.csv"), (deleted, "b.csv"), (deleted, "c.csv")] {
        sources
            .import_csv(
                thread,
                name,
                "client",
                None,
                Bytes::from_static(b"x\n1\n2\n"),
            )
            .await
            .expect("imported");
    }
    assert_eq!(fx.objects().await.len(), 3);
    service
        .delete_thread(&alice, deleted)
        .await
        .expect("deleted");
    let left = fx.objects().await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains(&kept.to_string()), "{left:?}");

    // The store is unreachable when the next thread is deleted: the rows
    // go, the objects stay, and a record is left for the sweep.
    let mut unreachable = settings(&fx.server.endpoint);
    unreachable.access.endpoint = Some("http://127.0.0.1:9".to_owned());
    let broken: Arc<SqlDataSources> = Arc::new(
        SqlDataSources::new(fx.pool.clone(), import, query)
            .with_objects(TableObjects::new(&unreachable).expect("a store")),
    );
    let broken_service = RunsService::new(fx.repo.clone(), Vec::new(), broken);
    broken_service
        .delete_thread(&alice, kept)
        .await
        .expect("deleted");
    assert!(
        fx.repo
            .get_thread("org-a", "alice", kept)
            .await
            .expect("read")
            .is_none()
    );
    assert_eq!(
        fx.objects().await.len(),
        1,
        "the object outlived a failed delete"
    );
    let records: i64 = sqlx::query("SELECT COUNT(*) AS n FROM data_source_object_sweeps")
        .fetch_one(&fx.pool)
        .await
        .expect("counted")
        .try_get("n")
        .expect("n");
    assert_eq!(records, 1);
    assert_eq!(sources.sweep_objects().await.expect("swept"), 1);
    assert!(fx.objects().await.is_empty());
    assert_eq!(
        sources.sweep_objects().await.expect("swept"),
        0,
        "the record went too"
    );
}

/// A CSV of about `mb` MB: an id, a group of ten, an amount and a label.
fn large_csv(mb: usize) -> Vec<u8> {
    let mut csv = String::with_capacity(mb * 1_000_000 + 100);
    csv.push_str("id,grp,amount,label\n");
    let mut id = 0u64;
    while csv.len() < mb * 1_000_000 {
        let _ = writeln!(csv, "{id},{},{}.25,label-{}", id % 10, id % 1000, id % 7919);
        id += 1;
    }
    csv.into_bytes()
}

fn env_mb(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn a_table_larger_than_the_query_memory_streams_from_the_store() {
    let fx = Fixture::new().await;
    let csv_mb = env_mb("SWITCHBOARD_OBJSTORE_CSV_MB", 48);
    let ceiling = env_mb("SWITCHBOARD_OBJSTORE_CEILING_MB", 192) * 1024 * 1024;
    let csv = Bytes::from(large_csv(csv_mb));
    let import = ImportLimits {
        max_bytes: csv.len() + 1,
        max_rows: usize::MAX,
        max_cells: usize::MAX,
        ..ImportLimits::default()
    };
    // The engine's pool is a quarter of the process's ceiling, and a table
    // read whole counts in it: the 48 MB table decodes to about 70 MB, past
    // the pool of the default 192 MiB ceiling; at 1 GB (1.5 GB decoded) the
    // table is past the ceiling itself.
    let query = QueryLimits {
        timeout: Duration::from_secs(600),
        memory_bytes: ceiling / 4,
        process_memory_bytes: ceiling,
        ..QueryLimits::default()
    };
    let sql = "SELECT grp, COUNT(*) AS n, SUM(amount) AS total FROM big \
               WHERE amount >= 500 GROUP BY grp ORDER BY grp";

    let sources = fx.sources(import, query);
    let thread = fx.thread().await;
    let started = Instant::now();
    let this = std::process::id();
    let before = switchboard_test_support::rss_mib(this);
    let importing = Peak::watch(move || switchboard_test_support::rss_mib(this));
    let source = sources
        .import_csv(thread, "big.csv", "client", None, csv.clone())
        .await
        .expect("imported into the store");
    let import_time = started.elapsed();
    let import_peak = importing.stop().await;
    let started = Instant::now();
    let watcher =
        Peak::watch(move || worker_of(thread).and_then(switchboard_test_support::peak_rss_mib));
    let result = sources
        .query(thread, sql)
        .await
        .expect("streams from the store");
    let query_time = started.elapsed();
    let peak = watcher.stop().await;
    let rows = source.row_count;
    assert_eq!(result.rows.len(), 10);
    let counted: i64 = result
        .rows
        .iter()
        .map(|r| r[1].parse::<i64>().expect("a count"))
        .sum();
    // Amounts go 0..999 by id: the rows whose amount is at least 500.
    let expected = rows / 1000 * 500 + (rows % 1000 - 500).max(0);
    assert_eq!(counted, expected);
    let mib = |value: Option<u64>| value.map_or_else(|| "?".to_owned(), |v| v.to_string());
    eprintln!(
        "objstore: {csv_mb} MB CSV, {rows} rows, ceiling {} MiB: import {import_time:?}, \
         query {query_time:?}, worker peak RSS {} MiB; this process's RSS {} MiB before \
         the import (the CSV in it), at most {} MiB during it",
        ceiling / (1024 * 1024),
        mib(peak),
        mib(before),
        mib(import_peak),
    );

    // The same table in the database's storage is read whole: refused.
    let database = fx.database_sources(import, query);
    let other = fx.thread().await;
    database
        .import_csv(other, "big.csv", "client", None, csv.clone())
        .await
        .expect("imported into the database");
    drop(csv);
    let error = database
        .query(other, sql)
        .await
        .expect_err("too large to load");
    eprintln!("objstore: the same query, table in the database: {error}");
    assert!(
        matches!(&error, QueryError::OutOfMemory { .. })
            || matches!(&error, QueryError::Engine(why) if why.contains("more than this query has left")),
        "{error:?}"
    );
}

/// The most memory a reading gave, sampled every 20 ms until stopped (a
/// query's worker while the query runs, this process while it imports).
struct Peak {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Option<u64>>,
}

impl Peak {
    fn watch(read: impl Fn() -> Option<u64> + Send + 'static) -> Self {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut peak = None;
            loop {
                if let Some(mib) = read() {
                    peak = peak.max(Some(mib));
                }
                tokio::select! {
                    _ = &mut stopped => return peak,
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
        });
        Self { stop, task }
    }

    async fn stop(self) -> Option<u64> {
        let _ = self.stop.send(());
        self.task.await.ok().flatten()
    }
}

/// The child process of this one that runs a query for `thread`.
fn worker_of(thread: ThreadId) -> Option<u32> {
    let thread = thread.to_string();
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| {
            children
                .split_whitespace()
                .filter_map(|pid| pid.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&thread))
        })
}
