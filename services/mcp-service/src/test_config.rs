//! The settings a test server starts with.

use std::time::Duration;

use switchboard_db::DatabaseArgs;
use switchboard_server::{AuthArgs, CommonArgs, ServerArgs, TelemetryArgs};

use crate::{
    config::{
        ApprovalArgs, AuditArgs, Config, EndpointArgs, GrpcArgs, GuardrailArgs, OpenApiArgs,
        PolicyArgs, ToolsetArgs,
    },
    domain::elicitation::ElicitationPolicy,
};

/// A home root of its own per service, so that services started by one test
/// process do not remove each other's homes.
fn test_home_root() -> String {
    std::env::temp_dir()
        .join(format!(
            "switchboard-stdio-{}",
            uuid::Uuid::now_v7().simple()
        ))
        .display()
        .to_string()
}

/// A random sealing key ring of one key, for tests.
fn test_secret_keys() -> String {
    crate::sealing::KeyRing::random_spec("test")
}

/// The shared settings of a test server: loopback, the given database and
/// HS256 secret, readable logs.
fn test_common(database_url: &str, jwt_secret: &str) -> CommonArgs {
    CommonArgs {
        server: ServerArgs::for_tests(),
        auth: AuthArgs::hs256(jwt_secret),
        telemetry: TelemetryArgs {
            log_format: switchboard_telemetry::LogFormat::Pretty,
            log_filter: "info".into(),
            ..TelemetryArgs::default()
        },
        database: DatabaseArgs::for_url(database_url),
    }
}

impl Config {
    /// Settings for tests: loopback ephemeral port, the given database and
    /// HS256 secret, a random sealing key, loopback allowed outbound.
    pub fn for_tests(database_url: &str, jwt_secret: &str) -> Self {
        Self {
            common: test_common(database_url, jwt_secret),
            secret_keys: Some(test_secret_keys()),
            secret_keys_file: None,
            dev_mode: false,
            outbound_allow: "127.0.0.0/8,::1/128".into(),
            stdio_allow: String::new(),
            stdio_allow_file: None,
            stdio_path: "/usr/local/bin:/usr/bin:/bin".into(),
            stdio_home_root: test_home_root(),
            stdio_max_file_bytes: 256 << 20,
            stdio_org_disk_quota_bytes: 1 << 30,
            stdio_org_max_files: 100_000,
            stdio_disk_check_interval: Duration::from_secs(10),
            stdio_max_data_bytes: 2 << 30,
            stdio_max_cpu: Duration::from_secs(3600),
            stdio_max_open_files: 256,
            stdio_max_processes: 4096,
            stdio_sandbox: None,
            stdio_sandbox_read: "/usr,/lib,/lib64,/bin,/sbin,/etc,/opt,/sys,/dev".into(),
            stdio_sandbox_write: String::new(),
            catalog_file: None,
            tls_ca_file: None,
            connect_timeout: Duration::from_secs(5),
            pool_idle_timeout: Duration::from_secs(4),
            call_timeout: Duration::from_secs(10),
            standalone_stream_wait: Duration::from_secs(5),
            max_sessions: 1000,
            session_idle_timeout: Duration::from_secs(300),
            discovery_ttl: Duration::from_secs(300),
            integration_cache_ttl: Duration::from_secs(2),
            policy: PolicyArgs::default(),
            audit: AuditArgs::default(),
            approvals: ApprovalArgs::default(),
            toolsets: ToolsetArgs::default(),
            guardrails: GuardrailArgs::default(),
            openapi: OpenApiArgs::default(),
            grpc: GrpcArgs::default(),
            endpoint: EndpointArgs::default(),
            resume_ttl: Duration::from_secs(24 * 3600),
            max_result_bytes: 4 * 1024 * 1024,
            max_arguments_bytes: 1 << 20,
            max_server_text_bytes: 4096,
            max_sessions_per_org: 200,
            max_stdio_sessions_per_org: 20,
            discovery_max_pages: 100,
            discovery_max_items: 10_000,
            discovery_max_bytes: 8 * 1024 * 1024,
            oauth_max_token_response_bytes: 64 * 1024,
            oauth_start_interval: Duration::from_secs(10),
            workload_identity_token_file: None,
            workload_identity_token_max_bytes: 16 * 1024,
            exchanged_token_cache_entries: 10_000,
            elicitation: ElicitationPolicy::Decline,
            task_poll_min: Duration::from_millis(100),
            task_poll_max: Duration::from_secs(5),
        }
    }
}
