//! runs-service binary: configuration, telemetry, then [`switchboard_runs_service::run`].

use clap::Parser;
use switchboard_runs_service::{Config, SERVICE_NAME, run};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let _telemetry = switchboard_telemetry::init(&config.common.telemetry.config(SERVICE_NAME))?;
    run(config, switchboard_server::shutdown_signal())
        .await
        .inspect_err(|error| tracing::error!(error = ?error, "runs-service failed"))
}
