//! mcp-service settings, from flags or environment.

use switchboard_db::DatabaseArgs;
use switchboard_server::{AuthArgs, CommonArgs, ServerArgs, TelemetryArgs};

/// Everything mcp-service is configured with.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "mcp-service", version, about = "Switchboard mcp-service")]
pub struct Config {
    /// Server, auth, telemetry and storage settings.
    #[command(flatten)]
    pub common: CommonArgs,
}

impl Config {
    /// Settings for tests: loopback ephemeral port, the given database and
    /// HS256 secret.
    pub fn for_tests(database_url: &str, jwt_secret: &str) -> Self {
        Self {
            common: CommonArgs {
                server: ServerArgs::for_tests(),
                auth: AuthArgs::hs256(jwt_secret),
                telemetry: TelemetryArgs {
                    log_format: switchboard_telemetry::LogFormat::Pretty,
                    log_filter: "info".into(),
                    otlp_endpoint: None,
                },
                database: DatabaseArgs::for_url(database_url),
            },
        }
    }
}
