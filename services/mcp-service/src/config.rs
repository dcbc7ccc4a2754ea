//! mcp-service settings, from flags or environment.

use std::{path::PathBuf, time::Duration};

use anyhow::{Context as _, bail};
use switchboard_server::CommonArgs;

pub use crate::approval_settings::ApprovalArgs;
pub use crate::audit_settings::AuditArgs;
pub use crate::endpoint_settings::EndpointArgs;
pub use crate::policy_settings::PolicyArgs;
use crate::{
    domain::{
        address_policy::AddressPolicy,
        catalog::Catalog,
        elicitation::ElicitationPolicy,
        stdio_policy::{ChildSettings, Sandbox, StdioAllowList},
    },
    outbound::mcp::tasks::TaskPolling,
    sealing::KeyRing,
};
pub use crate::{
    grpc_settings::GrpcArgs, guardrail_settings::GuardrailArgs, openapi_settings::OpenApiArgs,
    toolset_settings::ToolsetArgs,
};

/// Everything mcp-service is configured with.
#[derive(Clone, clap::Parser)]
#[command(name = "mcp-service", version, about = "Switchboard mcp-service")]
pub struct Config {
    /// Server, auth, telemetry and storage settings.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Keys sealing integration secrets: `id:base64(32 bytes)` entries,
    /// comma-separated; the first seals, all open (rotation).
    #[arg(long, env = "SWITCHBOARD_SECRET_KEYS", hide_env_values = true)]
    pub secret_keys: Option<String>,
    /// File holding the secret keys (a mounted Kubernetes Secret).
    #[arg(long, env = "SWITCHBOARD_SECRET_KEYS_FILE")]
    pub secret_keys_file: Option<PathBuf>,
    /// Development mode: without secret keys, seal with a fixed, publicly
    /// known key. Never in production.
    #[arg(long, env = "SWITCHBOARD_DEV_MODE", default_value_t = false)]
    pub dev_mode: bool,
    /// Addresses outbound connections may reach despite being loopback,
    /// private or link-local: CIDRs or IPs, comma-separated.
    #[arg(long, env = "SWITCHBOARD_OUTBOUND_ALLOW", default_value = "")]
    pub outbound_allow: String,
    /// Command lines integrations may start as stdio MCP servers,
    /// comma-separated: `program [arg-glob ...] [env=NAME|NAME]`; an entry
    /// naming only the program permits no arguments and no environment.
    #[arg(long, env = "SWITCHBOARD_STDIO_ALLOW", default_value = "")]
    pub stdio_allow: String,
    /// File of further stdio allow-list entries (TOML `[[program]]` tables
    /// with `command`, `args` and `env`), for patterns with spaces or commas.
    #[arg(long, env = "SWITCHBOARD_STDIO_ALLOW_FILE")]
    pub stdio_allow_file: Option<PathBuf>,
    /// `PATH` of stdio servers; they see none of the service's environment.
    #[arg(
        long,
        env = "SWITCHBOARD_STDIO_PATH",
        default_value = "/usr/local/bin:/usr/bin:/bin"
    )]
    pub stdio_path: String,
    /// Directory in which each stdio session gets a private, empty `HOME`
    /// (mode 0700, removed when the session closes); owned by this replica,
    /// leftovers in it are removed at start-up.
    #[arg(
        long,
        env = "SWITCHBOARD_STDIO_HOME_ROOT",
        default_value = "/tmp/switchboard-stdio"
    )]
    pub stdio_home_root: String,
    /// Largest file a stdio server may write (RLIMIT_FSIZE), in bytes.
    #[arg(long, env = "SWITCHBOARD_STDIO_MAX_FILE_BYTES", default_value_t = 256 << 20)]
    pub stdio_max_file_bytes: u64,
    /// Bytes the homes of one organization's stdio sessions may hold
    /// together; past it, its sessions end.
    #[arg(long, env = "SWITCHBOARD_STDIO_ORG_DISK_QUOTA_BYTES", default_value_t = 1 << 30)]
    pub stdio_org_disk_quota_bytes: u64,
    /// Files and directories the homes of one organization may hold together.
    #[arg(
        long,
        env = "SWITCHBOARD_STDIO_ORG_MAX_FILES",
        default_value_t = 100_000
    )]
    pub stdio_org_max_files: u64,
    /// How often the homes are measured against the quota.
    #[arg(long, env = "SWITCHBOARD_STDIO_DISK_CHECK_INTERVAL", default_value = "10s", value_parser = humantime::parse_duration)]
    pub stdio_disk_check_interval: Duration,
    /// Most heap and private writable memory of a stdio server (RLIMIT_DATA), in bytes.
    #[arg(long, env = "SWITCHBOARD_STDIO_MAX_DATA_BYTES", default_value_t = 2 << 30)]
    pub stdio_max_data_bytes: u64,
    /// Most CPU time a stdio server uses over its life (RLIMIT_CPU); then it is killed.
    #[arg(long, env = "SWITCHBOARD_STDIO_MAX_CPU", default_value = "1h", value_parser = humantime::parse_duration)]
    pub stdio_max_cpu: Duration,
    /// Most open files of a stdio server (RLIMIT_NOFILE).
    #[arg(long, env = "SWITCHBOARD_STDIO_MAX_OPEN_FILES", default_value_t = 256)]
    pub stdio_max_open_files: u64,
    /// Most processes and threads a stdio server may leave its user with
    /// (RLIMIT_NPROC, counted per user by the kernel).
    #[arg(long, env = "SWITCHBOARD_STDIO_MAX_PROCESSES", default_value_t = 4096)]
    pub stdio_max_processes: u64,
    /// The `stdio-sandbox` launcher (shipped next to mcp-service): when
    /// set, every stdio server starts through it, confined by Landlock with
    /// its resource limits set before `exec`.
    #[arg(long, env = "SWITCHBOARD_STDIO_SANDBOX")]
    pub stdio_sandbox: Option<PathBuf>,
    /// Paths sandboxed stdio servers may read and execute below, comma-separated.
    #[arg(
        long,
        env = "SWITCHBOARD_STDIO_SANDBOX_READ",
        default_value = "/usr,/lib,/lib64,/bin,/sbin,/etc,/opt,/sys,/dev"
    )]
    pub stdio_sandbox_read: String,
    /// Paths sandboxed stdio servers may write below, comma-separated
    /// (besides their `HOME` and `/dev/null`).
    #[arg(long, env = "SWITCHBOARD_STDIO_SANDBOX_WRITE", default_value = "")]
    pub stdio_sandbox_write: String,
    /// Catalog of predefined integrations (TOML); the built-in one when unset.
    #[arg(long, env = "SWITCHBOARD_CATALOG_FILE")]
    pub catalog_file: Option<PathBuf>,
    /// PEM file of certificate authorities trusted for MCP servers and
    /// OAuth endpoints besides the system's (a private CA's root).
    #[arg(long, env = "SWITCHBOARD_MCP_TLS_CA_FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// Connection and handshake limit of integrations that set none.
    #[arg(long, env = "SWITCHBOARD_MCP_CONNECT_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub connect_timeout: Duration,
    /// How long an idle connection to an MCP server or OAuth endpoint is
    /// kept for reuse; below the idle timeout of the servers (5 s for Node
    /// and uvicorn), so a request never goes out on a connection the server
    /// is closing.
    #[arg(long, env = "SWITCHBOARD_MCP_POOL_IDLE_TIMEOUT", default_value = "4s", value_parser = humantime::parse_duration)]
    pub pool_idle_timeout: Duration,
    /// Per-call limit of integrations that set none.
    #[arg(long, env = "SWITCHBOARD_MCP_CALL_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub call_timeout: Duration,
    /// Longest wait, on opening a streamable HTTP session of a server of the
    /// initialize era, for the server to answer the session's standalone GET
    /// stream before the session is used (within the connect limit).
    #[arg(long, env = "SWITCHBOARD_MCP_STANDALONE_STREAM_WAIT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub standalone_stream_wait: Duration,
    /// Most upstream MCP sessions kept open; beyond it the least recently
    /// used is closed.
    #[arg(long, env = "SWITCHBOARD_MCP_MAX_SESSIONS", default_value_t = 10_000)]
    pub max_sessions: usize,
    /// Upstream sessions unused this long are closed.
    #[arg(long, env = "SWITCHBOARD_MCP_SESSION_IDLE_TIMEOUT", default_value = "5m", value_parser = humantime::parse_duration)]
    pub session_idle_timeout: Duration,
    /// How long a discovery result is served from the cache (a server's
    /// `list_changed` notification or an integration update drops it sooner).
    #[arg(long, env = "SWITCHBOARD_MCP_DISCOVERY_TTL", default_value = "5m", value_parser = humantime::parse_duration)]
    pub discovery_ttl: Duration,
    /// How long an integration read for a call (or for a path of the MCP
    /// endpoint, by its slug) is reused by later calls; changes through
    /// another replica take effect within this time.
    #[arg(long, env = "SWITCHBOARD_INTEGRATION_CACHE_TTL", default_value = "2s", value_parser = humantime::parse_duration)]
    pub integration_cache_ttl: Duration,
    /// Tool policies: their cache and limits.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// The audit trail: what it records and keeps.
    #[command(flatten)]
    pub audit: AuditArgs,
    /// Approval gates: expiry and bounds.
    #[command(flatten)]
    pub approvals: ApprovalArgs,
    /// Toolsets: their bounds.
    #[command(flatten)]
    pub toolsets: ToolsetArgs,
    /// Guardrails on tool traffic: each detector's action.
    #[command(flatten)]
    pub guardrails: GuardrailArgs,
    /// OpenAPI integrations: the bounds of their documents.
    #[command(flatten)]
    pub openapi: OpenApiArgs,
    /// gRPC integrations: the bounds of their descriptors and answers.
    #[command(flatten)]
    pub grpc: GrpcArgs,
    /// The MCP endpoint for MCP clients: where, and its bounds.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    /// How long a server's `request_state` or `task_id`, sealed to the
    /// caller and call that received it, may be sent back to resume it.
    #[arg(long, env = "SWITCHBOARD_MCP_RESUME_TTL", default_value = "24h", value_parser = humantime::parse_duration)]
    pub resume_ttl: Duration,
    /// Largest tool, resource or prompt result passed on, in bytes.
    #[arg(long, env = "SWITCHBOARD_MCP_MAX_RESULT_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_result_bytes: usize,
    /// Largest arguments of a call (a tool's or a prompt's arguments, a
    /// template's parameters, the caller's answers), each as JSON text, in
    /// bytes; past it the call is refused on every front door.
    #[arg(
        id = "call_max_arguments_bytes",
        long = "max-arguments-bytes",
        env = "SWITCHBOARD_MCP_MAX_ARGUMENTS_BYTES",
        default_value_t = 1 << 20
    )]
    pub max_arguments_bytes: usize,
    /// Longest text of a server about a call (a JSON-RPC error's message,
    /// a failure's detail) passed on to callers, logged or recorded in the
    /// audit trail, in bytes; past it the text is cut and says so.
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_MAX_SERVER_TEXT_BYTES",
        default_value_t = 4096
    )]
    pub max_server_text_bytes: usize,
    /// Most upstream MCP sessions (and validations in progress) one
    /// organization holds; beyond it its least recently used idle session is
    /// closed, or the call refused when all are in use.
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_MAX_SESSIONS_PER_ORG",
        default_value_t = 200
    )]
    pub max_sessions_per_org: usize,
    /// Most stdio sessions (each a process, validations included) one
    /// organization holds, within its sessions.
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_MAX_STDIO_SESSIONS_PER_ORG",
        default_value_t = 20
    )]
    pub max_stdio_sessions_per_org: usize,
    /// Pages followed per listing (tools, resources, templates, prompts) in
    /// one discovery.
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_DISCOVERY_MAX_PAGES",
        default_value_t = 100
    )]
    pub discovery_max_pages: usize,
    /// Items of all listings of one discovery together.
    #[arg(
        long,
        env = "SWITCHBOARD_MCP_DISCOVERY_MAX_ITEMS",
        default_value_t = 10_000
    )]
    pub discovery_max_items: usize,
    /// Bytes (as JSON) of all listed items of one discovery together.
    #[arg(long, env = "SWITCHBOARD_MCP_DISCOVERY_MAX_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub discovery_max_bytes: usize,
    /// Largest OAuth response read, in bytes: token endpoints, and for
    /// per-user OAuth also metadata and client registration.
    #[arg(long, env = "SWITCHBOARD_OAUTH_MAX_TOKEN_RESPONSE_BYTES", default_value_t = 64 * 1024)]
    pub oauth_max_token_response_bytes: usize,
    /// The service's workload identity token (a Kubernetes projected
    /// service-account token file), presented by integrations that
    /// authenticate with workload identity; read afresh for every token
    /// request, as the platform rotates it.
    #[arg(long, env = "SWITCHBOARD_WORKLOAD_IDENTITY_TOKEN_FILE")]
    pub workload_identity_token_file: Option<PathBuf>,
    /// Largest workload identity token read, in bytes.
    #[arg(long, env = "SWITCHBOARD_WORKLOAD_IDENTITY_TOKEN_MAX_BYTES", default_value_t = 16 * 1024)]
    pub workload_identity_token_max_bytes: usize,
    /// Most tokens exchanged on behalf of callers kept in memory (one per
    /// organization, integration, caller and audience); the least recently
    /// used is forgotten first, and exchanged again when next needed.
    #[arg(long, env = "SWITCHBOARD_EXCHANGED_TOKEN_CACHE_ENTRIES", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub exchanged_token_cache_entries: u64,
    /// Least time between two new OAuth authorization flows of one user and
    /// integration; a start within it returns the live flow.
    #[arg(long, env = "SWITCHBOARD_OAUTH_START_INTERVAL", default_value = "10s", value_parser = humantime::parse_duration)]
    pub oauth_start_interval: Duration,
    /// How a server's request for the user's input in the middle of a call
    /// (an elicitation) is answered: `decline`, or `defaults` (accept with
    /// the defaults the server's form declares, decline when a required
    /// field has none).
    #[arg(long, env = "SWITCHBOARD_ELICITATION", value_enum, default_value_t = ElicitationPolicy::Decline)]
    pub elicitation: ElicitationPolicy,
    /// Shortest pause between two polls of a task a server runs a tool call
    /// as, whatever interval the server suggests (at least 10ms).
    #[arg(long, env = "SWITCHBOARD_MCP_TASK_POLL_MIN", default_value = "100ms", value_parser = humantime::parse_duration)]
    pub task_poll_min: Duration,
    /// Longest pause between two polls of such a task, whatever interval
    /// the server suggests.
    #[arg(long, env = "SWITCHBOARD_MCP_TASK_POLL_MAX", default_value = "5s", value_parser = humantime::parse_duration)]
    pub task_poll_max: Duration,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("common", &self.common)
            .field(
                "secret_keys",
                &self.secret_keys.as_ref().map(|_| "<redacted>"),
            )
            .field("secret_keys_file", &self.secret_keys_file)
            .field("dev_mode", &self.dev_mode)
            .field("outbound_allow", &self.outbound_allow)
            .field("stdio_allow", &self.stdio_allow)
            .field("stdio_allow_file", &self.stdio_allow_file)
            .field("catalog_file", &self.catalog_file)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The bounds of what callers send with a call, and of a server's text.
    pub fn call_bounds(&self) -> crate::domain::bounds::CallBounds {
        crate::domain::bounds::CallBounds {
            max_arguments_bytes: self.max_arguments_bytes,
            max_server_text_bytes: self.max_server_text_bytes,
        }
    }

    /// How tasks are polled; refuses a floor under 10ms (a server
    /// suggesting no pause would be polled without rest) or above the cap.
    pub fn task_polling(&self) -> anyhow::Result<TaskPolling> {
        const LEAST: Duration = Duration::from_millis(10);
        if self.task_poll_min < LEAST {
            bail!("SWITCHBOARD_MCP_TASK_POLL_MIN must be at least {LEAST:?}");
        }
        if self.task_poll_max < self.task_poll_min {
            bail!("SWITCHBOARD_MCP_TASK_POLL_MAX must be at least SWITCHBOARD_MCP_TASK_POLL_MIN");
        }
        Ok(TaskPolling {
            min_interval: self.task_poll_min,
            max_interval: self.task_poll_max,
        })
    }

    /// The key ring; refuses to go on without keys unless in dev mode.
    pub fn key_ring(&self) -> anyhow::Result<KeyRing> {
        let spec = match (&self.secret_keys, &self.secret_keys_file) {
            (Some(keys), None) => Some(keys.clone()),
            (None, Some(path)) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read {}", path.display()))?,
            ),
            (Some(_), Some(_)) => {
                bail!("set only one of SWITCHBOARD_SECRET_KEYS and SWITCHBOARD_SECRET_KEYS_FILE")
            }
            (None, None) => None,
        };
        match spec {
            Some(spec) => Ok(KeyRing::parse(&spec)?),
            None if self.dev_mode => {
                tracing::warn!(
                    "dev mode: integration secrets are sealed with a publicly known key"
                );
                Ok(KeyRing::development())
            }
            None => bail!(
                "no key to seal integration secrets: set SWITCHBOARD_SECRET_KEYS or \
                 SWITCHBOARD_SECRET_KEYS_FILE (or SWITCHBOARD_DEV_MODE=true for local use)"
            ),
        }
    }

    /// The outbound address policy.
    pub fn address_policy(&self) -> anyhow::Result<AddressPolicy> {
        AddressPolicy::parse_allow_list(&self.outbound_allow)
            .map_err(|e| anyhow::anyhow!("invalid SWITCHBOARD_OUTBOUND_ALLOW: {e}"))
    }

    /// The stdio allow-list (both forms) and how its programs are started.
    pub fn stdio_allow_list(&self) -> anyhow::Result<StdioAllowList> {
        let mut list =
            StdioAllowList::parse(&self.stdio_allow).context("invalid SWITCHBOARD_STDIO_ALLOW")?;
        if let Some(path) = &self.stdio_allow_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("failed to read {}", path.display()))?;
            list = list.extend(
                StdioAllowList::parse_file(&text)
                    .with_context(|| format!("invalid {}", path.display()))?,
            );
        }
        let child = ChildSettings {
            path: self.stdio_path.clone(),
            home_root: self.stdio_home_root.clone(),
            max_file_bytes: self.stdio_max_file_bytes,
            org_disk_quota_bytes: self.stdio_org_disk_quota_bytes,
            org_max_files: self.stdio_org_max_files,
            disk_check_interval: self
                .stdio_disk_check_interval
                .max(Duration::from_millis(50)),
            max_data_bytes: self.stdio_max_data_bytes,
            max_cpu_seconds: self.stdio_max_cpu.as_secs().max(1),
            max_open_files: self.stdio_max_open_files,
            max_processes: self.stdio_max_processes,
            sandbox: self.stdio_sandbox.as_ref().map(|launcher| Sandbox {
                launcher: launcher.display().to_string(),
                read: comma_list(&self.stdio_sandbox_read),
                write: comma_list(&self.stdio_sandbox_write),
            }),
        };
        child.check_paths()?;
        Ok(list.with_child_settings(child))
    }

    /// The predefined catalog.
    pub fn catalog(&self) -> anyhow::Result<Catalog> {
        match &self.catalog_file {
            None => Ok(Catalog::builtin()),
            Some(path) => Catalog::parse(
                &std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read {}", path.display()))?,
            ),
        }
    }
}

fn comma_list(spec: &str) -> Vec<String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_polling(min_ms: u64, max_ms: u64) -> Config {
        let mut config = Config::for_tests("sqlite::memory:", "secret");
        config.task_poll_min = Duration::from_millis(min_ms);
        config.task_poll_max = Duration::from_millis(max_ms);
        config
    }

    #[test]
    fn the_task_poll_floor_is_at_least_10ms_and_never_above_the_cap() {
        let at_limits = with_polling(10, 10)
            .task_polling()
            .expect("10ms is allowed");
        assert_eq!(at_limits.min_interval, Duration::from_millis(10));
        assert_eq!(at_limits.max_interval, Duration::from_millis(10));
        let below = with_polling(9, 1_000)
            .task_polling()
            .expect_err("under 10ms");
        assert!(below.to_string().contains("SWITCHBOARD_MCP_TASK_POLL_MIN"));
        let crossed = with_polling(200, 199)
            .task_polling()
            .expect_err("cap under floor");
        assert!(
            crossed
                .to_string()
                .contains("SWITCHBOARD_MCP_TASK_POLL_MAX")
        );
    }

    #[test]
    fn the_task_poll_defaults_are_those_documented() {
        use clap::Parser as _;
        let config = Config::try_parse_from(["mcp-service"]).expect("defaults parse");
        assert_eq!(
            config.task_polling().expect("valid"),
            TaskPolling::default()
        );
    }
}
