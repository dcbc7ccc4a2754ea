//! Wiring: storage, adapters and the gRPC server.

use std::{future::Future, net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use switchboard_auth::Authenticator;
use switchboard_db::Migrations;
use switchboard_proto::runs::v1::runs_service_server::RunsServiceServer;
use switchboard_server::{RunningServer, Services};

use crate::{Config, inbound::RunsApi};

/// The name the service reports in telemetry.
pub const SERVICE_NAME: &str = "runs-service";

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

const MIGRATIONS: Migrations = Migrations {
    sqlite: &SQLITE_MIGRATIONS,
    postgres: &POSTGRES_MIGRATIONS,
};

const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 50052);

struct Built {
    authenticator: Arc<Authenticator>,
    services: Services,
}

async fn build(config: &Config) -> anyhow::Result<Built> {
    let authenticator = Arc::new(
        Authenticator::new(&config.common.auth.verifier_config()?)
            .context("invalid token verification settings")?,
    );
    let _db = config
        .common
        .database
        .open(SERVICE_NAME, MIGRATIONS)
        .await?;
    let max = config.common.server.max_message_bytes;
    let api = RunsServiceServer::new(RunsApi::new())
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);
    Ok(Built {
        authenticator,
        services: Services::new().with(api),
    })
}

/// Runs runs-service until `shutdown` resolves, then shuts down gracefully.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let built = build(&config).await?;
    switchboard_server::bind_and_serve(
        SERVICE_NAME,
        &config.common.server,
        DEFAULT_LISTEN,
        built.authenticator,
        built.services,
        shutdown,
    )
    .await
}

/// Starts runs-service on a background task (tests and embedders).
pub async fn spawn(config: Config) -> anyhow::Result<RunningServer> {
    let built = build(&config).await?;
    switchboard_server::spawn(&config.common.server, built.authenticator, built.services).await
}
