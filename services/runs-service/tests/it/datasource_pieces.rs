//! Imports parsed and encoded in pieces, a turn of the data-source threads
//! each: another organization's small import beside a large one on one
//! thread, a caller that gives up part-way, and the piece size at its
//! limits; on SQLite and PostgreSQL.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use sqlx::Row;
use switchboard_runs_service::{
    domain::{
        datasource::{Capacity, DataSource, DataSources, ImportLimits, QueryLimits},
        ids::ThreadId,
    },
    outbound::{datasource::SqlDataSources, sql::SqlRunsRepository},
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

struct World {
    _db: TestDb,
    pool: sqlx::AnyPool,
    repo: SqlRunsRepository,
}

impl World {
    async fn new(kind: DbKind) -> Self {
        let db = TestDb::new(kind).await.expect("a test database");
        let pool = crate::stores::migrated_pool(&db.url).await;
        Self {
            _db: db,
            repo: SqlRunsRepository::new(pool.clone()),
            pool,
        }
    }

    /// Data sources on one data-source thread, in pieces of `piece_bytes`,
    /// `per_org` imports of an organization at once.
    fn sources(&self, piece_bytes: usize, per_org: usize) -> Arc<SqlDataSources> {
        let capacity = Capacity {
            threads: 1,
            nice: 0,
            piece_bytes,
            concurrent_work: 4,
            concurrent_work_per_org: per_org,
            ..Capacity::default()
        };
        Arc::new(
            SqlDataSources::new(
                self.pool.clone(),
                ImportLimits::default(),
                QueryLimits::default(),
            )
            .with_capacity(capacity),
        )
    }

    async fn thread(&self, org: &str) -> ThreadId {
        crate::stores::stored_thread(&self.repo, org, "alice").await
    }

    /// The stored bytes of `source`.
    async fn content(&self, source: &DataSource) -> Vec<u8> {
        sqlx::query("SELECT content FROM data_sources WHERE id = $1")
            .bind(source.id.to_string())
            .fetch_one(&self.pool)
            .await
            .expect("stored")
            .try_get("content")
            .expect("bytes")
    }
}

/// A CSV of `rows` rows of five columns, some fields empty.
fn csv(rows: usize) -> Vec<u8> {
    let mut out = String::from("id,region,product,units,price\n");
    for id in 0..rows {
        let units = if id % 10 == 3 {
            String::new()
        } else {
            (id % 13).to_string()
        };
        out.push_str(&format!(
            "{id},region-{},product-{},{units},{}.{:02}\n",
            id % 8,
            id % 97,
            id % 500,
            id % 100
        ));
    }
    out.into_bytes()
}

/// Waits until `sources` has run at least `pieces` pieces of imports.
async fn until_pieces(sources: &SqlDataSources, pieces: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while sources.import_pieces_run() < pieces {
        assert!(Instant::now() < deadline, "the import did not start");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn a_small_import_finishes_before_another_organizations_large_one(kind: DbKind) {
    let world = World::new(kind).await;
    let sources = world.sources(16 * 1024, 2);
    let (noisy, quiet) = (world.thread("org-a").await, world.thread("org-b").await);
    let large = csv(60_000);
    let pieces = large.len() / (16 * 1024);
    let running = {
        let sources = Arc::clone(&sources);
        tokio::spawn(async move {
            sources
                .import_csv(
                    noisy,
                    "large",
                    "client",
                    None,
                    bytes::Bytes::copy_from_slice(&large),
                )
                .await
        })
    };
    until_pieces(&sources, 3).await;
    let small = sources
        .import_csv(
            quiet,
            "small",
            "client",
            None,
            bytes::Bytes::copy_from_slice(&csv(20)),
        )
        .await
        .expect("imported");
    let at_small = sources.import_pieces_run();
    assert!(
        !running.is_finished(),
        "org-b's small import waited for org-a's whole import"
    );
    let large = running.await.expect("ends").expect("imported");
    assert_eq!((small.row_count, large.row_count), (20, 60_000));
    let total = sources.import_pieces_run();
    assert!(
        total > u64::try_from(pieces).expect("fits"),
        "the large import took one turn a piece: {total}"
    );
    assert!(
        at_small < total / 2,
        "org-b's import waited behind {at_small} of {total} pieces"
    );
}

async fn an_import_whose_caller_gives_up_stops_at_the_next_piece(kind: DbKind) {
    let world = World::new(kind).await;
    // One import of the organization at a time: the next one needs the
    // slot the first gives back.
    let sources = world.sources(8 * 1024, 1);
    let thread = world.thread("org-a").await;
    let caller = {
        let sources = Arc::clone(&sources);
        tokio::spawn(async move {
            sources
                .import_csv(
                    thread,
                    "given_up",
                    "client",
                    None,
                    bytes::Bytes::copy_from_slice(&csv(60_000)),
                )
                .await
        })
    };
    until_pieces(&sources, 5).await;
    caller.abort();
    assert!(caller.await.is_err(), "the caller gave up part-way");
    let at_abort = sources.import_pieces_run();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        sources.import_pieces_run() <= at_abort + 1,
        "no piece ran after the one under way: {} then {}",
        at_abort,
        sources.import_pieces_run()
    );
    // The slot and the thread are free again at once.
    let next = tokio::time::timeout(
        Duration::from_secs(10),
        sources.import_csv(
            thread,
            "next",
            "client",
            None,
            bytes::Bytes::copy_from_slice(&csv(20)),
        ),
    )
    .await
    .expect("the slot and the thread were given back")
    .expect("imported");
    let stored = sources.list(thread).await.expect("listed");
    assert_eq!(
        stored.iter().map(|s| s.id).collect::<Vec<_>>(),
        [next.id],
        "nothing of the given-up import was stored"
    );
}

async fn the_piece_size_at_its_limits_stores_the_same_table(kind: DbKind) {
    let world = World::new(kind).await;
    let data = csv(300);
    let most = ImportLimits::default().max_bytes;
    let mut stored = Vec::new();
    for piece_bytes in [1, 1000, most] {
        let sources = world.sources(piece_bytes, 2);
        let thread = world.thread("org-a").await;
        let source = sources
            .import_csv(
                thread,
                "sales",
                "client",
                None,
                bytes::Bytes::copy_from_slice(&data),
            )
            .await
            .expect("imported");
        let pieces = sources.import_pieces_run();
        match piece_bytes {
            1 => assert!(pieces > 300, "a row a piece: {pieces}"),
            1000 => assert!(pieces > 8, "{pieces} pieces"),
            _ => assert_eq!(pieces, 1, "a whole import a turn"),
        }
        let result = sources
            .query(thread, "SELECT count(*), sum(units), max(price) FROM sales")
            .await
            .expect("queried");
        stored.push((
            world.content(&source).await,
            source.columns.clone(),
            source.row_count,
            result.rows,
        ));
    }
    assert!(
        stored.windows(2).all(|pair| pair[0] == pair[1]),
        "the same bytes, columns, rows and answers at every piece size"
    );
}

db_tests!(
    a_small_import_finishes_before_another_organizations_large_one,
    an_import_whose_caller_gives_up_stops_at_the_next_piece,
    the_piece_size_at_its_limits_stores_the_same_table,
);
