//! runs-service settings, from flags or environment.

use std::time::Duration;

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
    /// Model providers agents may use: `name=kind,base_url[,api_key_env=VAR]`
    /// entries separated by `;` (kinds `openai` for any OpenAI-compatible
    /// Chat Completions server, `anthropic`).
    /// Base URLs can carry credentials, so `--help` does not show the value.
    #[arg(
        long,
        env = "SWITCHBOARD_MODEL_PROVIDERS",
        default_value = "",
        hide_env_values = true
    )]
    pub model_providers: String,
    /// Model calls per run for agents that set no limit.
    #[arg(long, env = "SWITCHBOARD_DEFAULT_MAX_STEPS", default_value_t = 10)]
    pub default_max_steps: u32,
    /// Time each integration's discovery may take at the start of a run.
    #[arg(long, env = "SWITCHBOARD_DISCOVERY_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub discovery_timeout: Duration,
    /// Time one tool call may take.
    #[arg(long, env = "SWITCHBOARD_TOOL_TIMEOUT", default_value = "120s", value_parser = humantime::parse_duration)]
    pub tool_timeout: Duration,
    /// Tool calls of one model turn executed at once.
    #[arg(long, env = "SWITCHBOARD_MAX_PARALLEL_TOOLS", default_value_t = 8)]
    pub max_parallel_tools: usize,
    /// A running run whose process has not renewed it for this long is
    /// marked interrupted.
    #[arg(long, env = "SWITCHBOARD_RUN_STALE_AFTER", default_value = "60s", value_parser = humantime::parse_duration)]
    pub run_stale_after: Duration,
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
            model_providers: String::new(),
            default_max_steps: 10,
            discovery_timeout: Duration::from_secs(5),
            tool_timeout: Duration::from_secs(30),
            max_parallel_tools: 8,
            run_stale_after: Duration::from_secs(60),
        }
    }
}
