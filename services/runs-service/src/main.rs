//! runs-service binary: configuration, telemetry, then [`switchboard_runs_service::run`]
//! (or [`switchboard_runs_service::migrate`] alone).

use clap::Parser;
use switchboard_runs_service::{Config, SERVICE_NAME, migrate, run};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let _telemetry = switchboard_telemetry::init(&config.common.telemetry.config(SERVICE_NAME))?;
    if config.common.database.migrate_only {
        return migrate(&config)
            .await
            .inspect_err(|error| tracing::error!(error = ?error, "migrations failed"));
    }
    run(config, switchboard_server::shutdown_signal())
        .await
        .inspect_err(|error| tracing::error!(error = ?error, "runs-service failed"))
}
