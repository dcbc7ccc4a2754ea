//! runs-service settings, from flags or environment.

use std::time::Duration;

use switchboard_db::DatabaseArgs;

use crate::{
    domain::{history::HistoryLimits, input::InputLimits},
    outbound::llm::{DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, StreamLimits},
};
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
    /// Limits of model calls and of what a run sends and accepts.
    #[command(flatten)]
    pub model_limits: ModelLimitArgs,
}

/// Limits of model calls, of the history a run sends, and of the input a
/// run accepts.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelLimitArgs {
    /// Longest wait for the next event of a model's streamed answer.
    #[arg(long, env = "SWITCHBOARD_MODEL_IDLE_TIMEOUT", default_value = "120s", value_parser = humantime::parse_duration)]
    pub model_idle_timeout: Duration,
    /// Longest time of one model call, retries and streaming included.
    #[arg(long, env = "SWITCHBOARD_MODEL_CALL_TIMEOUT", default_value = "10m", value_parser = humantime::parse_duration)]
    pub model_call_timeout: Duration,
    /// Most bytes of text and tool-call arguments in one model answer.
    #[arg(long, env = "SWITCHBOARD_MODEL_MAX_RESPONSE_BYTES", default_value_t = DEFAULT_MAX_RESPONSE_BYTES)]
    pub model_max_response_bytes: usize,
    /// Most bytes of one server-sent event of a model's stream.
    #[arg(long, env = "SWITCHBOARD_MODEL_MAX_EVENT_BYTES", default_value_t = DEFAULT_MAX_EVENT_BYTES)]
    pub model_max_event_bytes: usize,
    /// Output-token limit sent with every model request.
    #[arg(long, env = "SWITCHBOARD_MODEL_MAX_OUTPUT_TOKENS", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub model_max_output_tokens: u32,
    /// Most messages of a thread sent to the model (the newest); at least
    /// two, so that a tool call and its results always fit.
    #[arg(long, env = "SWITCHBOARD_HISTORY_MAX_MESSAGES", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(2..))]
    pub history_max_messages: u32,
    /// Most bytes of a thread's messages sent to the model (the newest).
    #[arg(long, env = "SWITCHBOARD_HISTORY_MAX_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub history_max_bytes: usize,
    /// Largest user message a run accepts, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_USER_MESSAGE_BYTES", default_value_t = 1024 * 1024)]
    pub max_user_message_bytes: usize,
    /// Most client tool results one ExecuteRun accepts.
    #[arg(
        long,
        env = "SWITCHBOARD_MAX_CLIENT_TOOL_RESULTS",
        default_value_t = 128
    )]
    pub max_client_tool_results: usize,
    /// Largest client tool result content, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_CLIENT_TOOL_RESULT_BYTES", default_value_t = 1024 * 1024)]
    pub max_client_tool_result_bytes: usize,
}

impl ModelLimitArgs {
    /// The limits of one model call.
    pub fn stream_limits(&self) -> StreamLimits {
        StreamLimits {
            idle_timeout: self.model_idle_timeout,
            call_timeout: self.model_call_timeout,
            max_response_bytes: self.model_max_response_bytes,
            max_event_bytes: self.model_max_event_bytes,
        }
    }

    /// The history window of a model request.
    pub fn history_limits(&self) -> HistoryLimits {
        HistoryLimits {
            max_messages: self.history_max_messages,
            max_bytes: self.history_max_bytes,
        }
    }

    /// The limits of a run's input.
    pub fn input_limits(&self) -> InputLimits {
        InputLimits {
            max_user_message_bytes: self.max_user_message_bytes,
            max_client_tool_results: self.max_client_tool_results,
            max_client_tool_result_bytes: self.max_client_tool_result_bytes,
        }
    }
}

impl Default for ModelLimitArgs {
    /// The defaults the flags declare.
    fn default() -> Self {
        let stream = StreamLimits::default();
        Self {
            model_idle_timeout: stream.idle_timeout,
            model_call_timeout: stream.call_timeout,
            model_max_response_bytes: stream.max_response_bytes,
            model_max_event_bytes: stream.max_event_bytes,
            model_max_output_tokens: 4096,
            history_max_messages: 1000,
            history_max_bytes: 8 * 1024 * 1024,
            max_user_message_bytes: 1024 * 1024,
            max_client_tool_results: 128,
            max_client_tool_result_bytes: 1024 * 1024,
        }
    }
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
            model_limits: ModelLimitArgs::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Limits {
        #[command(flatten)]
        limits: ModelLimitArgs,
    }

    #[test]
    fn the_limit_defaults_match_the_flags() {
        let parsed = Limits::try_parse_from(["runs-service"]).expect("defaults parse");
        let defaults = ModelLimitArgs::default();
        assert_eq!(parsed.limits.stream_limits(), defaults.stream_limits());
        assert_eq!(parsed.limits.history_limits(), defaults.history_limits());
        assert_eq!(parsed.limits.input_limits(), defaults.input_limits());
        assert_eq!(
            parsed.limits.model_max_output_tokens,
            defaults.model_max_output_tokens
        );
    }
}
