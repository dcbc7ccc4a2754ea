//! The command line: global options and the command groups. Each group's own
//! arguments live beside its code in `commands/`.

use std::{path::PathBuf, str::FromStr};

use clap::{Args, Parser, Subcommand};

use crate::commands::{
    agents::AgentsCommand, approvals::ApprovalsCommand, audit::AuditCommand, chat::ChatArgs,
    integrations::IntegrationsCommand, policies::PoliciesCommand, runs::RunsCommand,
    sources::SourcesCommand, threads::ThreadsCommand, toolsets::ToolsetsCommand, usage::UsageArgs,
};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the operation failed (a run failed or stopped early, a validation failed, a server error)
  2  bad usage or input (flags, files, the config file)
  3  a service could not be reached or did not answer in time
  4  no token, or the token was refused (UNAUTHENTICATED, PERMISSION_DENIED)
  5  not found
  6  refused by the service (INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, RESOURCE_EXHAUSTED)
  130 interrupted (Ctrl-C)";

/// The command-line client of Switchboard.
///
/// Addresses and the token come from flags, else the environment, else the
/// config file (`--config`, default `~/.config/switchboard/config.toml`,
/// keys `mcp_addr`, `runs_addr`, `token`, `token_file`, `ca_file`,
/// `client_cert_file`, `client_key_file`).
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// Where and as whom to connect.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Print JSON (protobuf JSON mapping) instead of tables and text; `chat`
    /// prints one event per line.
    #[arg(long, global = true)]
    pub json: bool,
    /// Idempotency key sent with a create, an import or `chat -m`: the same
    /// command repeated with the same key (after a lost answer, say) happens
    /// once.
    #[arg(long, global = true, value_name = "KEY")]
    pub request_id: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Where the services are and the token to present.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// mcp-service address [default: http://127.0.0.1:50051]
    #[arg(long, env = "SWITCHBOARD_MCP_ADDR", global = true, value_name = "URL")]
    pub mcp_addr: Option<String>,
    /// runs-service address [default: http://127.0.0.1:50052]
    #[arg(long, env = "SWITCHBOARD_RUNS_ADDR", global = true, value_name = "URL")]
    pub runs_addr: Option<String>,
    /// Bearer token (a JWT) sent with every call.
    #[arg(
        long,
        env = "SWITCHBOARD_TOKEN",
        global = true,
        hide_env_values = true,
        value_name = "JWT"
    )]
    pub token: Option<String>,
    /// Send the token over plaintext HTTP/2 to a host that is not loopback
    /// (anyone on the path reads it). Without it such an address is refused;
    /// an address without a scheme means TLS (`https://`) unless it is
    /// loopback.
    #[arg(long, env = "SWITCHBOARD_INSECURE_PLAINTEXT", global = true)]
    pub insecure_plaintext: bool,
    /// PEM file of the CAs a service's certificate may be signed by, besides
    /// the system's (a cluster's private CA).
    #[arg(long, env = "SWITCHBOARD_CA_FILE", global = true, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate presented over TLS, for a service that
    /// requires one (mutual TLS); with `--client-key`.
    #[arg(
        long,
        env = "SWITCHBOARD_CLIENT_CERT_FILE",
        global = true,
        value_name = "FILE"
    )]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of `--client-cert`.
    #[arg(
        long,
        env = "SWITCHBOARD_CLIENT_KEY_FILE",
        global = true,
        value_name = "FILE"
    )]
    pub client_key: Option<PathBuf>,
    /// Config file [default: ~/.config/switchboard/config.toml, when present]
    #[arg(long, env = "SWITCHBOARD_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Deadline of each call other than a run's stream.
    #[arg(
        long,
        env = "SWITCHBOARD_CALL_TIMEOUT",
        global = true,
        default_value = "30s",
        value_name = "DURATION"
    )]
    pub timeout: humantime::Duration,
}

/// The command groups.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// MCP integrations: the catalog, create, list, validate, discover, enable/disable
    #[command(subcommand, visible_alias = "int")]
    Integrations(IntegrationsCommand),
    /// Agents: instructions, a model, integrations and client tools
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Tool policies: who may call which tool, in CEL rules; explain a decision
    #[command(subcommand)]
    Policies(PoliciesCommand),
    /// Toolsets: named selections of integrations, served to MCP clients
    #[command(subcommand)]
    Toolsets(ToolsetsCommand),
    /// The audit trail: who called what, and how it ended; verify its chain
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Approvals of gated tool calls: list, approve, deny
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Threads: conversations with an agent, and their messages
    #[command(subcommand)]
    Threads(ThreadsCommand),
    /// Data sources: CSV tables of a thread the model queries with SQL
    #[command(subcommand)]
    Sources(SourcesCommand),
    /// Runs: list a thread's runs, show or watch one
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Usage: tokens, tool calls and runs per day or month (admins)
    Usage(UsageArgs),
    /// Talk to an agent: the answer streams in, tool calls show their progress
    Chat(ChatArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Paging of a list call.
#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// Items per page (the service caps it at 500).
    #[arg(long, default_value_t = 50)]
    pub page_size: i32,
    /// The token a previous page printed, for the next page.
    #[arg(long, default_value = "")]
    pub page_token: String,
}

/// A `NAME=VALUE` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The part before the first `=`.
    pub key: String,
    /// The rest.
    pub value: String,
}

impl FromStr for KeyValue {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok(Self {
                key: key.to_owned(),
                value: value.to_owned(),
            }),
            _ => Err(format!("expected NAME=VALUE, got {text:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn key_values_split_at_the_first_equals_sign() {
        let kv: KeyValue = "A=b=c".parse().expect("parses");
        assert_eq!((kv.key.as_str(), kv.value.as_str()), ("A", "b=c"));
        assert!("=x".parse::<KeyValue>().is_err());
        assert!("nothing".parse::<KeyValue>().is_err());
    }
}
