//! `switchboard`: the command-line client of Switchboard. It manages MCP
//! integrations, agents, threads and data sources, and chats with agents,
//! through the two services' gRPC APIs.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod args;
mod chat;
mod client;
mod commands;
mod config;
mod error;
mod output;
mod refs;
mod terminal_text;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            output::to_stderr(format!("error: cannot start the async runtime: {error}"));
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.is_broken_pipe() => ExitCode::SUCCESS,
        Err(error) => {
            output::to_stderr(format!("error: {error}"));
            ExitCode::from(error.exit_code())
        }
    }
}
