//! Set-up shared by the fuzz targets: a runtime and a data-source store over
//! an in-memory SQLite database, built once per fuzzing process.

use std::{str::FromStr as _, time::Duration};

use sqlx::{
    AnyPool, Executor as _,
    any::{AnyConnectOptions, AnyPoolOptions},
};
use switchboard_runs_service::{
    domain::{
        datasource::{ImportLimits, QueryLimits},
        entities::Thread,
        ids::{AgentId, ThreadId},
        ports::RunsRepository as _,
    },
    outbound::{
        datasource::SqlDataSources,
        sql::{MIGRATIONS, SqlRunsRepository},
    },
};

/// The thread every fuzzed import and query belongs to.
pub const THREAD_ID: &str = "00000000-0000-7000-8000-0000000f0220";

/// [`THREAD_ID`] as runs-service's thread id.
pub fn thread_id() -> ThreadId {
    THREAD_ID
        .parse()
        .expect("THREAD_ID is a UUID (a set-up invariant)")
}

/// A runtime like the service's: several workers, timers on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the fuzzing runtime starts (a set-up invariant)")
}

/// A migrated in-memory SQLite database holding [`THREAD_ID`].
///
/// One connection that is never recycled: an in-memory database lives as
/// long as its connection, and a fuzzing run lasts longer than the pool's
/// default connection lifetime.
pub async fn database() -> AnyPool {
    sqlx::any::install_default_drivers();
    let options = AnyConnectOptions::from_str("sqlite::memory:")
        .expect("the in-memory SQLite URL parses (a set-up invariant)");
    let pool = AnyPoolOptions::new()
        .min_connections(1)
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(Duration::from_secs(60))
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("PRAGMA foreign_keys = ON").await?;
                Ok(())
            })
        })
        .connect_with(options)
        .await
        .expect("the in-memory SQLite database opens (a set-up invariant)");
    MIGRATIONS
        .sqlite
        .run(&pool)
        .await
        .expect("runs-service's migrations apply (a set-up invariant)");
    SqlRunsRepository::new(pool.clone())
        .insert_thread(&Thread {
            id: thread_id(),
            org_id: "fuzz-org".to_owned(),
            user_id: "fuzz-user".to_owned(),
            agent_id: AgentId::new(),
            title: "fuzz".to_owned(),
            created_at: 0,
            updated_at: 0,
        })
        .await
        .expect("the thread is stored (a set-up invariant)");
    pool
}

/// The service's default import limits: the fuzzer probes what production
/// accepts.
pub fn import_limits() -> ImportLimits {
    ImportLimits::default()
}

/// The service's default query limits but a shorter timeout, so that a slow
/// query costs the fuzzer seconds rather than ten.
pub fn query_limits() -> QueryLimits {
    QueryLimits {
        timeout: Duration::from_secs(2),
        ..QueryLimits::default()
    }
}

/// A data-source store over `pool` that keeps no decoded table between
/// queries, so that every query decodes the stored bytes again.
pub fn uncached_sources(pool: AnyPool) -> SqlDataSources {
    SqlDataSources::new(pool, import_limits(), query_limits())
        .with_queries_in_process()
        .with_cache_bytes(0)
}

/// Whether `name` is a plain SQL identifier as the import promises: lowercase
/// ASCII letters, digits and underscores, not starting with a digit.
pub fn is_plain_identifier(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
