//! `scripted-model`: an OpenAI- and Anthropic-compatible model server on a
//! fixed address that answers every request with the same rule (see
//! [`ScriptedModel::start_looping`]). Logs go to stderr.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::net::SocketAddr;

use clap::Parser;
use switchboard_scripted_model::{Looping, Plan, PlanStep, ScriptedModel};
use tracing_subscriber::EnvFilter;

/// Scripted model server for Switchboard's local demo and benchmarks.
#[derive(Debug, Parser)]
#[command(name = "scripted-model", version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: SocketAddr,
    /// Tool to call whenever a request offers it and fewer than `rounds`
    /// tool results followed the user's message.
    #[arg(long)]
    tool: Option<String>,
    /// Arguments of that tool call, as JSON text.
    #[arg(long, default_value = "{}")]
    arguments: String,
    /// Text to answer when no tool is called.
    #[arg(long, default_value = "hello from the scripted model")]
    reply: String,
    /// Tool calls, one per model turn, before the model answers.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// A plan instead of one tool: call these tools in order after every
    /// user message, one per model turn, offered or not (repeatable).
    #[arg(long, value_name = "TOOL=JSON", value_parser = parse_step, conflicts_with = "tool")]
    step: Vec<PlanStep>,
    /// The plan's answer once every step has its result; `{result:N}` is
    /// the Nth result, `{last_tool_result}` the last.
    #[arg(long, default_value = "{last_tool_result}", requires = "step")]
    answer: String,
}

fn parse_step(text: &str) -> Result<PlanStep, String> {
    let (tool, arguments) = text
        .split_once('=')
        .ok_or_else(|| format!("expected TOOL=JSON, got {text:?}"))?;
    serde_json::from_str::<serde_json::Value>(arguments)
        .map_err(|error| format!("the arguments of {tool} are not JSON: {error}"))?;
    Ok(PlanStep::new(tool, arguments))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            // Requests are logged at debug so that in-process benchmarks stay
            // quiet; the demo wants to see them.
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,switchboard_scripted_model=debug")),
        )
        .with_writer(std::io::stderr)
        .init();

    let model = if args.step.is_empty() {
        ScriptedModel::start_looping_on(
            args.listen,
            Looping::new(args.tool, args.arguments, args.reply).rounds(args.rounds),
        )
        .await?
    } else {
        let plan = Plan {
            steps: args.step,
            answer: args.answer,
        };
        ScriptedModel::start_plan_on(args.listen, plan).await?
    };
    tracing::info!(base_url = %model.base_url(), "listening");
    shutdown_signal().await?;
    tracing::info!("shutting down");
    model.shutdown().await;
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted?,
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}
