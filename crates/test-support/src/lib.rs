//! Test support for Switchboard: a fresh database per test on SQLite or
//! PostgreSQL, and tokens signed with the test secret.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

pub mod bench;
mod examples;
pub mod grpc;
pub mod logs;
pub mod otlp;
pub mod pki;
pub mod seaweedfs;

pub use examples::{
    ApiProcess, example_grpc_service, example_http_server, spawn_example_api,
    spawn_example_grpc_service, spawn_example_grpc_service_with,
};

use std::str::FromStr;

use anyhow::Context as _;
use sqlx::{ConnectOptions, Connection, Executor, postgres::PgConnectOptions};
use switchboard_auth::{Claims, TokenMinter};

/// The HS256 secret test servers are configured with.
pub const TEST_JWT_SECRET: &str = "switchboard-test-secret-0123456789";

/// The PostgreSQL server tests create their databases on; override with
/// `SWITCHBOARD_TEST_POSTGRES_URL`.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A database that exists for one test and is removed after it.
#[derive(Debug)]
pub struct TestDb {
    /// URL the service under test connects to.
    pub url: String,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    /// Embedded SQLite in a temporary directory.
    Sqlite,
    /// A new database on the test PostgreSQL server.
    Postgres,
}

impl TestDb {
    /// A fresh database of `kind`.
    pub async fn new(kind: DbKind) -> anyhow::Result<Self> {
        match kind {
            DbKind::Sqlite => Self::sqlite(),
            DbKind::Postgres => Self::postgres().await,
        }
    }

    /// A fresh SQLite file in a temporary directory.
    pub fn sqlite() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("test.db").display());
        Ok(Self {
            url,
            cleanup: Cleanup::Sqlite(dir),
        })
    }

    /// A fresh database on the test PostgreSQL server. Fails (never skips)
    /// when the server is not reachable.
    pub async fn postgres() -> anyhow::Result<Self> {
        let admin_url = std::env::var("SWITCHBOARD_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
        let name = format!("sb_test_{}", uuid::Uuid::now_v7().simple());
        let mut conn = PgConnectOptions::from_str(&admin_url)?
            .connect()
            .await
            .with_context(|| {
                format!("PostgreSQL is not reachable at {admin_url}; start it (see README)")
            })?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await?;
        let url = PgConnectOptions::from_str(&admin_url)?
            .database(&name)
            .to_url_lossy()
            .to_string();
        Ok(Self {
            url,
            cleanup: Cleanup::Postgres { admin_url, name },
        })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Cleanup::Postgres { admin_url, name } = &self.cleanup {
            let (admin_url, name) = (admin_url.clone(), name.clone());
            // Drop may run inside a runtime; a short-lived thread with its own
            // runtime removes the database without blocking that runtime.
            let _ = std::thread::spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(async move {
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&admin_url).await {
                        let _ = conn
                            .execute(
                                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str(),
                            )
                            .await;
                    }
                });
            })
            .join();
        }
    }
}

/// Signs tokens with [`TEST_JWT_SECRET`].
pub fn minter() -> TokenMinter {
    TokenMinter::hs256(TEST_JWT_SECRET)
}

/// A valid token for `user` in `org` with `roles`.
pub fn token(org: &str, user: &str, roles: &[&str]) -> String {
    minter()
        .token(org, user, roles)
        .expect("the test secret signs tokens")
}

/// A token whose `exp` lies an hour in the past.
pub fn expired_token(org: &str, user: &str) -> String {
    let mut claims = Claims::new(org, user, &[], std::time::Duration::ZERO);
    claims.exp = claims.iat.saturating_sub(3600);
    minter()
        .mint(&claims)
        .expect("the test secret signs tokens")
}

/// Adds `authorization: Bearer {token}` to a request.
pub fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}")
            .parse()
            .expect("a JWT is valid metadata"),
    );
    request
}

/// Defines `mod sqlite` and `mod postgres`, each with one `#[tokio::test]`
/// per named `async fn(DbKind)` in the enclosing module, so that every storage
/// test runs on both databases.
#[macro_export]
macro_rules! db_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::DbKind::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::DbKind::Postgres).await;
                }
            )*
        }
    };
}

/// Where a port's conformance suite runs: on each database, and on the
/// in-memory fake that stands in for them in unit tests, so that the fake
/// cannot drift from the rules the databases keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// A fresh database of this kind.
    Db(DbKind),
    /// The port's in-memory fake.
    Memory,
}

/// Defines `mod sqlite`, `mod postgres` and `mod memory` for a port's suite:
/// each test named under `every_store` runs on all three (an
/// `async fn(Store)`), each named under `databases_only` on the two
/// databases (an `async fn(DbKind)`). A rule the fake cannot keep (several
/// processes on one database, its clock) is listed under `databases_only`
/// with a comment saying why, so that no test leaves the fake silently.
#[macro_export]
macro_rules! store_tests {
    (
        every_store: [$($name:ident),* $(,)?],
        databases_only: [$($db_only:ident),* $(,)?] $(,)?
    ) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::Store::Db($crate::DbKind::Sqlite)).await;
                }
            )*
            $(
                #[tokio::test]
                async fn $db_only() {
                    super::$db_only($crate::DbKind::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::Store::Db($crate::DbKind::Postgres)).await;
                }
            )*
            $(
                #[tokio::test]
                async fn $db_only() {
                    super::$db_only($crate::DbKind::Postgres).await;
                }
            )*
        }
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::Store::Memory).await;
                }
            )*
        }
    };
}

/// A request for a custom integration reaching `url` over streamable HTTP,
/// named by its slug, with no auth and the default timeouts.
pub fn http_integration_request(
    slug: &str,
    url: &str,
) -> switchboard_proto::mcp::v1::CreateIntegrationRequest {
    http_integration_with_auth(slug, url, None)
}

/// [`http_integration_request`] with `auth`.
pub fn http_integration_with_auth(
    slug: &str,
    url: &str,
    auth: Option<switchboard_proto::mcp::v1::auth_config::Method>,
) -> switchboard_proto::mcp::v1::CreateIntegrationRequest {
    use switchboard_proto::mcp::v1 as mcp;
    mcp::CreateIntegrationRequest {
        display_name: slug.to_owned(),
        slug: slug.to_owned(),
        source: Some(mcp::create_integration_request::Source::Custom(
            mcp::CustomIntegrationSpec {
                transport: Some(mcp::Transport {
                    kind: Some(mcp::transport::Kind::StreamableHttp(
                        mcp::StreamableHttpTransport {
                            url: url.to_owned(),
                        },
                    )),
                }),
                auth: auth.map(|method| mcp::AuthConfig {
                    method: Some(method),
                }),
            },
        )),
        ..Default::default()
    }
}

/// Set by `make test` for its `cargo test --workspace`: that command has
/// already built every binary of the workspace (each package's integration
/// tests need its binaries), with the features the whole test build
/// resolves, so [`workspace_binary`] need not build them again.
pub const BINARIES_BUILT: &str = "SWITCHBOARD_TEST_BINARIES_BUILT";

/// The path of a binary of this workspace, for tests of another package
/// (which cannot name it with `CARGO_BIN_EXE_*`). Unless [`BINARIES_BUILT`]
/// is set and the file is there, cargo builds it (or finds it up to date)
/// once per test process: building every time, rather than only when the
/// file is missing, keeps a test from running a stale binary after the
/// package changed. `make test` sets the variable because a `cargo build`
/// of one package resolves features of its own and, on a clean tree,
/// compiles much of the workspace a second time while the tests wait.
pub fn workspace_binary(package: &str, name: &str) -> std::path::PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let path = beside_this_binary(name);
    let dir = path.parent().expect("a binary's path has a directory");
    if std::env::var_os(BINARIES_BUILT).is_some() && path.is_file() {
        return path;
    }
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args(["build", "--quiet", "-p", package, "--bin", name]);
        if dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building {name} failed");
        built.push(name.to_owned());
    }
    path
}

/// Where cargo puts the workspace binary `name` of the profile this test
/// or benchmark was built with: target/<profile>/deps/<this> →
/// target/<profile>/<name>.
fn beside_this_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.parent()
        .and_then(std::path::Path::parent)
        .expect("test binaries live in target/<profile>/deps")
        .join(name)
}

/// The workspace binary `name` already built with this benchmark's profile,
/// never built here (a benchmark's script builds every binary at once, with
/// the features the workspace build gives them); the error says `how` to
/// build it.
pub fn built_binary(name: &str, how: &str) -> anyhow::Result<std::path::PathBuf> {
    let path = beside_this_binary(name);
    anyhow::ensure!(path.is_file(), "{} is missing: {how}", path.display());
    Ok(path)
}

/// The most memory process `pid` has held (`VmHWM` in `/proc/<pid>/status`),
/// in MiB; `None` when it cannot be read.
pub fn peak_rss_mib(pid: u32) -> Option<u64> {
    status_mib(pid, "VmHWM:")
}

/// The memory process `pid` holds now (`VmRSS`), in MiB; `None` when it
/// cannot be read.
pub fn rss_mib(pid: u32) -> Option<u64> {
    status_mib(pid, "VmRSS:")
}

fn status_mib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// CPU time (user + system) process `pid` has used so far, from
/// `/proc/<pid>/stat` (Linux, in clock ticks of 10 ms); zero when it cannot
/// be read. `std::process::id()` is this process.
pub fn cpu_time(pid: u32) -> std::time::Duration {
    stat_cpu_time(&format!("/proc/{pid}/stat"))
}

/// CPU time (user + system) thread `tid` of this process has used so far,
/// as [`cpu_time`] reads a process's.
pub fn thread_cpu_time(tid: u32) -> std::time::Duration {
    stat_cpu_time(&format!("/proc/self/task/{tid}/stat"))
}

/// The id of the calling thread (Linux), from `/proc/thread-self`.
pub fn current_thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

fn stat_cpu_time(path: &str) -> std::time::Duration {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // utime and stime are the 12th and 13th fields after the command name,
    // which is in parentheses and may hold spaces.
    let ticks: u64 = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|n| n.parse::<u64>().ok())
        .sum();
    std::time::Duration::from_millis(ticks * 10)
}
