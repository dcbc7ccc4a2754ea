//! runs-service settings, from flags or environment.

mod budgets;
mod data_source_store;
mod data_sources;
mod replicas;
mod run_limits;
mod takeovers;

use std::time::Duration;

use switchboard_db::DatabaseArgs;

use crate::{
    domain::{history::HistoryLimits, input::InputLimits},
    outbound::llm::{DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, StreamLimits},
};
pub use budgets::BudgetArgs;
pub use data_source_store::ObjectStoreArgs;
pub use data_sources::DataSourceArgs;
pub use replicas::ReplicaArgs;
pub use run_limits::RunLimitArgs;
use switchboard_server::{AuthArgs, CommonArgs, ServerArgs, TelemetryArgs};
pub use takeovers::TakeoverArgs;

/// How runs-service reaches mcp-service over TLS.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct McpServiceTlsArgs {
    /// PEM file of the CAs mcp-service's certificate must be signed by;
    /// required by `https://` mcp-service URLs. Read again at every lookup
    /// of the replicas (`mcp-service-resolve-interval`).
    #[arg(long, env = "SWITCHBOARD_MCP_SERVICE_TLS_CA_FILE")]
    pub mcp_service_tls_ca_file: Option<std::path::PathBuf>,
    /// PEM file of the client certificate runs-service presents to
    /// mcp-service (mutual TLS); its SPIFFE ID or subject is the calling
    /// service mcp-service sees.
    #[arg(long, env = "SWITCHBOARD_MCP_SERVICE_TLS_CERT_FILE")]
    pub mcp_service_tls_cert_file: Option<std::path::PathBuf>,
    /// PEM file of that client certificate's private key.
    #[arg(long, env = "SWITCHBOARD_MCP_SERVICE_TLS_KEY_FILE")]
    pub mcp_service_tls_key_file: Option<std::path::PathBuf>,
}

impl McpServiceTlsArgs {
    /// The TLS files, or `None` for plaintext; a certificate without its
    /// key (or the other way round), or either without a CA, is refused.
    pub fn tls(&self) -> anyhow::Result<Option<crate::outbound::mcp::McpTls>> {
        let identity = match (
            &self.mcp_service_tls_cert_file,
            &self.mcp_service_tls_key_file,
        ) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            (None, None) => None,
            _ => anyhow::bail!(
                "set both SWITCHBOARD_MCP_SERVICE_TLS_CERT_FILE and SWITCHBOARD_MCP_SERVICE_TLS_KEY_FILE, or neither"
            ),
        };
        match (&self.mcp_service_tls_ca_file, identity) {
            (Some(ca_file), identity) => Ok(Some(crate::outbound::mcp::McpTls {
                ca_file: ca_file.clone(),
                identity,
            })),
            (None, None) => Ok(None),
            (None, Some(_)) => anyhow::bail!(
                "SWITCHBOARD_MCP_SERVICE_TLS_CERT_FILE requires SWITCHBOARD_MCP_SERVICE_TLS_CA_FILE"
            ),
        }
    }
}

/// Everything runs-service is configured with.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "runs-service", version, about = "Switchboard runs-service")]
pub struct Config {
    /// Server, auth, telemetry and storage settings.
    #[command(flatten)]
    pub common: CommonArgs,
    /// gRPC address of mcp-service: one `http://host:port` URL or several,
    /// comma-separated (`https://` with `mcp-service-tls-ca-file`); every
    /// address a host name resolves to is a replica (a headless Kubernetes
    /// Service names them all).
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_SERVICE_URL",
        default_value = "http://127.0.0.1:50051"
    )]
    pub mcp_service_url: String,
    /// How often mcp-service's host names are resolved again, so replicas
    /// join and leave; 0 resolves once at start.
    #[arg(long, env = "SWITCHBOARD_MCP_SERVICE_RESOLVE_INTERVAL", default_value = "10s", value_parser = humantime::parse_duration)]
    pub mcp_service_resolve_interval: Duration,
    /// TLS to mcp-service.
    #[command(flatten)]
    pub mcp_service_tls: McpServiceTlsArgs,
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
    /// Model ids that metrics name (comma-separated); other models are
    /// `_other`, since an agent's model is text its admin chose.
    #[arg(long, env = "SWITCHBOARD_METRICS_MODELS", default_value = "")]
    pub metrics_models: String,
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
    /// How long a run's lease lasts past its replica's last heartbeat, on
    /// the database's clock; a running run whose lease expired is marked
    /// interrupted, and its thread takes a new run at once.
    #[arg(long, env = "SWITCHBOARD_RUN_STALE_AFTER", default_value = "30s", value_parser = humantime::parse_duration)]
    pub run_stale_after: Duration,
    /// Run settings across replicas: heartbeats, names, stored events.
    #[command(flatten)]
    pub replicas: ReplicaArgs,
    /// Limits of model calls and of what a run sends and accepts.
    #[command(flatten)]
    pub model_limits: ModelLimitArgs,
    /// Data-source limits: CSV imports and SQL over them.
    #[command(flatten)]
    pub data_sources: DataSourceArgs,
    /// Runs in flight per organization and per user.
    #[command(flatten)]
    pub run_limits: RunLimitArgs,
    /// Monthly token budgets per organization.
    #[command(flatten)]
    pub budgets: BudgetArgs,
    /// Runs that continue on another replica when theirs stops.
    #[command(flatten)]
    pub takeovers: TakeoverArgs,
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
                    ..TelemetryArgs::default()
                },
                database: DatabaseArgs::for_url(database_url),
            },
            mcp_service_url: mcp_service_url.to_owned(),
            mcp_service_resolve_interval: Duration::from_secs(1),
            mcp_service_tls: McpServiceTlsArgs::default(),
            model_providers: String::new(),
            metrics_models: String::new(),
            default_max_steps: 10,
            discovery_timeout: Duration::from_secs(5),
            tool_timeout: Duration::from_secs(30),
            max_parallel_tools: 8,
            run_stale_after: Duration::from_secs(30),
            // Each test server is a replica of its own: several on one
            // database must not take each other's runs for a restart's.
            replicas: ReplicaArgs {
                replica_name: Some(format!("test-{}", uuid::Uuid::new_v4())),
                ..ReplicaArgs::default()
            },
            model_limits: ModelLimitArgs::default(),
            data_sources: DataSourceArgs::default(),
            run_limits: RunLimitArgs::default(),
            budgets: BudgetArgs::default(),
            takeovers: TakeoverArgs {
                run_max_takeovers: 2,
                ..TakeoverArgs::default()
            },
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

    #[test]
    fn the_csv_limit_must_fit_a_grpc_message_and_one_organization_never_holds_every_slot() {
        let defaults = DataSourceArgs::default();
        defaults
            .check(16 * 1024 * 1024)
            .expect("the defaults fit the default message limit");
        let error = defaults
            .check(8 * 1024 * 1024)
            .expect_err("a 15 MiB CSV cannot arrive in 8 MiB messages");
        assert!(
            error.to_string().contains("SWITCHBOARD_MAX_MESSAGE_BYTES"),
            "{error}"
        );
        let greedy = DataSourceArgs {
            concurrent_work_per_org: 4,
            ..DataSourceArgs::default()
        };
        assert!(greedy.check(16 * 1024 * 1024).is_err());
    }

    #[test]
    fn a_tool_result_table_size_under_one_kib_is_refused() {
        let at = |bytes: usize| DataSourceArgs {
            tool_result_table_bytes: bytes,
            ..DataSourceArgs::default()
        };
        at(1024)
            .check(16 * 1024 * 1024)
            .expect("1 KiB is the least");
        let error = at(1023).check(16 * 1024 * 1024).expect_err("below 1 KiB");
        assert!(
            error
                .to_string()
                .contains("SWITCHBOARD_TOOL_RESULT_TABLE_BYTES"),
            "{error}"
        );
        let config = Config::try_parse_from(["runs-service"]).expect("defaults parse");
        assert_eq!(config.data_sources.tool_result_table_bytes, 64 * 1024);
    }

    #[test]
    fn the_replica_defaults_match_the_flags_and_a_slow_heartbeat_is_refused() {
        let config = Config::try_parse_from(["runs-service"]).expect("defaults parse");
        let defaults = ReplicaArgs::default();
        let parsed = &config.replicas;
        assert_eq!(
            (
                parsed.run_heartbeat_interval,
                parsed.run_events_max,
                parsed.run_events_queue,
                parsed.run_stream_heartbeat,
                parsed.run_watch_poll_interval,
            ),
            (
                defaults.run_heartbeat_interval,
                defaults.run_events_max,
                defaults.run_events_queue,
                defaults.run_stream_heartbeat,
                defaults.run_watch_poll_interval,
            )
        );
        parsed
            .check(config.run_stale_after)
            .expect("the defaults fit the default lease");
        let error = parsed
            .check(Duration::from_secs(10))
            .expect_err("a 5 s heartbeat cannot keep a 10 s lease");
        assert!(
            error
                .to_string()
                .contains("SWITCHBOARD_RUN_HEARTBEAT_INTERVAL"),
            "{error}"
        );
    }

    #[test]
    fn data_source_settings_come_from_the_environment() {
        use clap::Parser as _;
        let config = Config::try_parse_from([
            "runs-service",
            "--data-source-cache-bytes",
            "1000",
            "--data-source-query-memory-bytes",
            "2000",
            "--data-source-org-bytes",
            "3000",
        ])
        .expect("parsed");
        let settings = &config.data_sources;
        assert_eq!(settings.capacity().cache_bytes, 1000);
        assert_eq!(settings.query_limits().memory_bytes, 2000);
        assert_eq!(settings.capacity().org_bytes, 3000);
    }

    #[test]
    fn the_data_source_threads_leave_a_core_and_their_limits_are_checked() {
        let defaults = Config::try_parse_from(["runs-service"]).expect("defaults parse");
        let capacity = defaults.data_sources.capacity();
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(capacity.threads, cores.saturating_sub(1).max(1));
        assert_eq!(capacity.nice, 10);
        assert!(capacity.sched_idle, "in the idle class by default");
        let at = |threads: usize, nice: i32| DataSourceArgs {
            threads: Some(threads),
            nice,
            ..DataSourceArgs::default()
        };
        let message_bytes = 16 * 1024 * 1024;
        at(1, 0).check(message_bytes).expect("one thread, no nice");
        at(256, 19).check(message_bytes).expect("the most");
        for (threads, nice, named) in [
            (0, 10, "SWITCHBOARD_DATA_SOURCE_THREADS"),
            (257, 10, "SWITCHBOARD_DATA_SOURCE_THREADS"),
            (1, 20, "SWITCHBOARD_DATA_SOURCE_NICE"),
            (1, -1, "SWITCHBOARD_DATA_SOURCE_NICE"),
        ] {
            let error = at(threads, nice)
                .check(message_bytes)
                .expect_err("out of range");
            assert!(error.to_string().contains(named), "{error}");
        }
        let set = Config::try_parse_from([
            "runs-service",
            "--data-source-threads",
            "3",
            "--data-source-nice",
            "0",
            "--data-source-sched-idle",
            "false",
        ])
        .expect("parsed");
        let capacity = set.data_sources.capacity();
        assert_eq!(
            (capacity.threads, capacity.nice, capacity.sched_idle),
            (3, 0, false)
        );
    }
}
