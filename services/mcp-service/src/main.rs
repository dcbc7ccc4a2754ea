//! mcp-service binary: configuration, telemetry, then [`switchboard_mcp_service::run`]
//! (or [`switchboard_mcp_service::migrate`] alone).

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use clap::Parser;
use switchboard_mcp_service::{Config, SERVICE_NAME, migrate, run};

/// mimalloc rather than the system allocator: a call allocates and frees
/// many small buffers across the runtime's threads (HTTP/2 frames, headers,
/// JSON), and the system allocator spent about a tenth of a call's CPU on
/// them under load (BENCHMARKS.md, ExecuteTool under load).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        .inspect_err(|error| tracing::error!(error = ?error, "mcp-service failed"))
}
