//! The commands, one module per group.

pub mod agents;
pub mod approvals;
pub mod audit;
pub mod chat;
mod discover_view;
mod integration_auth;
mod integration_create;
pub mod integrations;
pub mod policies;
pub mod runs;
pub mod sources;
pub mod threads;
pub mod toolsets;
pub mod usage;

use clap::CommandFactory as _;

use crate::{
    args::{Cli, Command},
    client::Clients,
    config::Settings,
    error::CliError,
    output::Output,
};

/// What every command works with.
#[derive(Debug, Clone)]
pub struct Context {
    /// The services.
    pub clients: Clients,
    /// Where results go.
    pub out: Output,
    /// The idempotency key of the command's create, import or run; empty
    /// for none.
    pub request_id: String,
}

/// Runs the command line.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    if let Command::Completions { shell } = cli.command {
        let mut command = Cli::command();
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut command, "switchboard", &mut script);
        return Output::new(false).text(&String::from_utf8_lossy(&script));
    }
    let settings = Settings::resolve(&cli.connection)?;
    let ctx = Context {
        clients: Clients::new(settings)?,
        out: Output::new(cli.json),
        request_id: cli.request_id.unwrap_or_default(),
    };
    match cli.command {
        Command::Integrations(command) => integrations::run(&ctx, command).await,
        Command::Agents(command) => agents::run(&ctx, command).await,
        Command::Policies(command) => policies::run(&ctx, command).await,
        Command::Toolsets(command) => toolsets::run(&ctx, command).await,
        Command::Audit(command) => audit::run(&ctx, command).await,
        Command::Approvals(command) => approvals::run(&ctx, command).await,
        Command::Threads(command) => threads::run(&ctx, command).await,
        Command::Sources(command) => sources::run(&ctx, command).await,
        Command::Runs(command) => runs::run(&ctx, command).await,
        Command::Usage(args) => usage::run(&ctx, args).await,
        Command::Chat(args) => chat::run(&ctx, args).await,
        Command::Completions { .. } => Ok(()),
    }
}
