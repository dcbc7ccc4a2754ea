//! runs-service settings, from flags or environment.

use switchboard_db::DatabaseArgs;
use switchboard_server::{AuthArgs, CommonArgs, ServerArgs, TelemetryArgs};

/// Everything runs-service is configured with.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "runs-service", version, about = "Switchboard runs-service")]
pub struct Config {
    /// Server, auth, telemetry and storage settings.
    #[command(flatten)]
    pub common: CommonArgs,
    /// gRPC address of mcp-service.
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_SERVICE_URL",
        default_value = "http://127.0.0.1:50051"
    )]
    pub mcp_service_url: String,
}

impl Config {
    /// Settings for tests: loopback ephemeral port, the given database, HS256
    /// secret and mcp-service address.
    pub fn for_tests(database_url: &str, jwt_secret: &str, mcp_service_url: &str) -> Self {
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
            mcp_service_url: mcp_service_url.to_owned(),
        }
    }
}
