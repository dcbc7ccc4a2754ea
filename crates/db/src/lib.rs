//! Database access shared by Switchboard services: one `sqlx` pool over
//! SQLite (embedded default, a file under the data directory) or PostgreSQL
//! (production), chosen by URL, with the service's migrations run at start.
//!
//! Queries are written once in the SQL both databases accept (`$1`
//! placeholders, text ids, integer timestamps) and run through `sqlx::Any`.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::{path::Path, str::FromStr, time::Duration};

pub mod request_ids;

use anyhow::{Context as _, bail};
use sqlx::{
    AnyPool, Executor,
    any::{AnyConnectOptions, AnyPoolOptions},
    migrate::Migrator,
};

/// The database behind a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite, embedded.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Backend {
    /// The backend a `sqlite:` or `postgres:` URL names.
    pub fn from_url(url: &str) -> anyhow::Result<Self> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Self::Postgres)
        } else {
            bail!("unsupported database URL scheme (expected sqlite: or postgres:)")
        }
    }
}

/// The migrations of one service, one set per backend (their DDL differs).
#[derive(Debug, Clone, Copy)]
pub struct Migrations {
    /// Migrations for SQLite.
    pub sqlite: &'static Migrator,
    /// Migrations for PostgreSQL.
    pub postgres: &'static Migrator,
}

/// An open, migrated database.
#[derive(Debug, Clone)]
pub struct Database {
    /// The connection pool.
    pub pool: AnyPool,
    /// Which database it is.
    pub backend: Backend,
}

/// The default embedded database URL: `{data_dir}/{name}.db`, created on first use.
pub fn sqlite_url(data_dir: &Path, name: &str) -> String {
    format!(
        "sqlite://{}?mode=rwc",
        data_dir.join(format!("{name}.db")).display()
    )
}

/// Connects to `url` and runs the pending migrations.
///
/// For SQLite the file's directory is created when missing, and WAL mode is
/// turned on so readers do not block the writer.
pub async fn open(
    url: &str,
    migrations: Migrations,
    max_connections: u32,
) -> anyhow::Result<Database> {
    sqlx::any::install_default_drivers();
    let backend = Backend::from_url(url)?;
    if backend == Backend::Sqlite {
        create_sqlite_parent_dir(url)?;
    }
    let options = AnyConnectOptions::from_str(url).context("invalid database URL")?;
    let pool = AnyPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        // An embedded SQLite connection cannot go stale, so checking it
        // before every use would only add a round trip to its thread.
        .test_before_acquire(backend != Backend::Sqlite)
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    conn.execute("PRAGMA foreign_keys = ON").await?;
                    // With WAL, NORMAL keeps the database consistent after a
                    // crash and spares an fsync per commit.
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                }
                Ok(())
            })
        })
        .connect_with(options)
        .await
        .with_context(|| format!("failed to connect to the {backend:?} database"))?;
    if backend == Backend::Sqlite {
        pool.execute("PRAGMA journal_mode = WAL").await?;
    }
    let migrator = match backend {
        Backend::Sqlite => migrations.sqlite,
        Backend::Postgres => migrations.postgres,
    };
    migrator
        .run(&pool)
        .await
        .context("failed to run database migrations")?;
    tracing::info!(backend = ?backend, "database ready");
    Ok(Database { pool, backend })
}

fn create_sqlite_parent_dir(url: &str) -> anyhow::Result<()> {
    let path = url
        .trim_start_matches("sqlite:")
        .trim_start_matches("//")
        .split('?')
        .next()
        .unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    if let Some(parent) = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create the data directory {}", parent.display()))?;
    }
    Ok(())
}

impl Database {
    /// Checks that the database answers a trivial query within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> anyhow::Result<()> {
        tokio::time::timeout(timeout, sqlx::query("SELECT 1").execute(&self.pool))
            .await
            .map_err(|_| anyhow::anyhow!("the database did not answer within {timeout:?}"))?
            .context("the database refused a ping")?;
        Ok(())
    }
}

/// Milliseconds since the Unix epoch, the timestamp format of every table.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_follow_the_url_scheme() {
        assert_eq!(
            Backend::from_url("sqlite://x.db").ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            Backend::from_url("postgres://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert!(Backend::from_url("mysql://h/db").is_err());
    }

    #[test]
    fn the_default_url_points_into_the_data_dir() {
        let url = sqlite_url(Path::new("/var/lib/sb"), "mcp");
        assert_eq!(url, "sqlite:///var/lib/sb/mcp.db?mode=rwc");
    }
}

/// Where a service keeps its data, from flags or environment.
#[derive(Clone, clap::Args)]
pub struct DatabaseArgs {
    /// Database URL (`postgres://…` in production). Defaults to an embedded
    /// SQLite file in the data directory. It may hold a password, so `--help`
    /// does not show its value.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory of the embedded SQLite database, created on first start.
    #[arg(long, env = "SWITCHBOARD_DATA_DIR", default_value = ".data")]
    pub data_dir: std::path::PathBuf,
    /// Largest number of pooled database connections.
    #[arg(long, env = "SWITCHBOARD_DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,
    /// How long an idempotency key (`request_id`) of a creating request is
    /// remembered: a repeat within it returns the first result.
    #[arg(long, env = "SWITCHBOARD_REQUEST_ID_WINDOW", default_value = "24h", value_parser = humantime::parse_duration)]
    pub request_id_window: Duration,
    /// Apply the pending migrations, then exit without serving (a
    /// deployment's migration step). On PostgreSQL concurrent runs wait
    /// for each other on the migrator's advisory lock, so each migration
    /// is applied once.
    #[arg(long, env = "SWITCHBOARD_MIGRATE_ONLY", default_value_t = false)]
    pub migrate_only: bool,
}

impl std::fmt::Debug for DatabaseArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseArgs")
            .field(
                "database_url",
                &self.database_url.as_ref().map(|_| "<redacted>"),
            )
            .field("data_dir", &self.data_dir)
            .field("db_max_connections", &self.db_max_connections)
            .field("request_id_window", &self.request_id_window)
            .field("migrate_only", &self.migrate_only)
            .finish()
    }
}

impl DatabaseArgs {
    /// Settings pointing at `url`.
    pub fn for_url(url: impl Into<String>) -> Self {
        Self {
            database_url: Some(url.into()),
            data_dir: ".data".into(),
            db_max_connections: 8,
            request_id_window: request_ids::DEFAULT_WINDOW,
            migrate_only: false,
        }
    }

    /// Applies the pending migrations of the service `name` and closes the
    /// database.
    pub async fn migrate(&self, name: &str, migrations: Migrations) -> anyhow::Result<()> {
        let database = self.open(name, migrations).await?;
        database.pool.close().await;
        tracing::info!("migrations applied");
        Ok(())
    }

    /// Opens the configured database for the service `name` and migrates it.
    pub async fn open(&self, name: &str, migrations: Migrations) -> anyhow::Result<Database> {
        let url = self
            .database_url
            .clone()
            .unwrap_or_else(|| sqlite_url(&self.data_dir, name));
        open(&url, migrations, self.db_max_connections).await
    }
}
