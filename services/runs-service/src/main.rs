//! runs-service binary: configuration, telemetry, then [`switchboard_runs_service::run`]
//! (or [`switchboard_runs_service::migrate`] alone).
//!
//! `runs-service query-worker <thread>` (hidden) runs one data-source query
//! that the service hands it on stdin, in a process of its own.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::process::ExitCode;

use clap::Parser;
use switchboard_runs_service::{
    Config, SERVICE_NAME, migrate,
    outbound::datasource::{WORKER_SUBCOMMAND, run_query_worker},
    run,
};

fn main() -> anyhow::Result<ExitCode> {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_SUBCOMMAND)
    {
        return Ok(run_query_worker());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve())
        .map(|()| ExitCode::SUCCESS)
}

async fn serve() -> anyhow::Result<()> {
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
