//! `switchboard runs`: a thread's runs, one run, and following a run until
//! it ends.

use std::time::Duration;

use clap::Subcommand;
use switchboard_proto::runs::v1::{self as runs, RunStatus};

use super::Context;
use crate::{
    client::RunsClient,
    error::{CliError, Service},
    output::{table, time, to_json},
};

/// Most message pages read to find a thread's runs (500 messages each).
const MAX_MESSAGE_PAGES: usize = 20;

/// The run commands.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// List the runs of a thread, oldest first
    List {
        /// The thread id.
        #[arg(long)]
        thread: String,
    },
    /// Show one run
    Show {
        /// The run id.
        run: String,
    },
    /// Follow a run until it ends, printing each change of state
    Watch {
        /// The run id.
        run: String,
        /// How often to ask.
        #[arg(long, default_value = "1s")]
        interval: humantime::Duration,
    },
}

/// Runs a run command.
pub async fn run(ctx: &Context, command: RunsCommand) -> Result<(), CliError> {
    let mut client = ctx.clients.runs()?;
    match command {
        RunsCommand::List { thread } => list(ctx, &mut client, &thread).await,
        RunsCommand::Show { run } => {
            let run = get(ctx, &mut client, &run).await?;
            ctx.out.either(&run, || ctx.out.line(summary(&run)))
        }
        RunsCommand::Watch { run, interval } => {
            watch(ctx, &mut client, &run, interval.into()).await
        }
    }
}

async fn list(ctx: &Context, client: &mut RunsClient, thread: &str) -> Result<(), CliError> {
    let mut found = Vec::new();
    for id in run_ids(ctx, client, thread).await? {
        found.push(get(ctx, client, &id).await?);
    }
    if ctx.out.is_json() {
        let list = found.iter().map(to_json).collect::<Result<Vec<_>, _>>()?;
        return ctx.out.line(serde_json::json!({ "runs": list }));
    }
    let mut rows = table(&["ID", "STATUS", "STEPS", "TOKENS IN/OUT", "STARTED", "ERROR"]);
    for run in &found {
        let usage = run.usage.unwrap_or_default();
        rows.add_row(vec![
            run.id.clone(),
            status_name(run.status).into(),
            run.steps.to_string(),
            format!("{}/{}", usage.input_tokens, usage.output_tokens),
            time(run.create_time.as_ref()),
            run.error.clone(),
        ]);
    }
    ctx.out.line(rows)
}

/// Prints the run each time its status or step count changes, until it
/// is no longer running.
async fn watch(
    ctx: &Context,
    client: &mut RunsClient,
    run: &str,
    interval: Duration,
) -> Result<(), CliError> {
    let mut last = None;
    loop {
        let current = get(ctx, client, run).await?;
        let state = (current.status, current.steps);
        if last != Some(state) {
            ctx.out
                .either(&current, || ctx.out.line(summary(&current)))?;
            last = Some(state);
        }
        if current.status != RunStatus::Running as i32 {
            return ended(&current);
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = tokio::signal::ctrl_c() => return Err(CliError::Interrupted),
        }
    }
}

async fn get(ctx: &Context, client: &mut RunsClient, id: &str) -> Result<runs::Run, CliError> {
    Ok(client
        .get_run(ctx.clients.unary(runs::GetRunRequest { id: id.to_owned() }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner()
        .run
        .unwrap_or_default())
}

/// The ids of the runs that wrote the thread's messages, in order.
async fn run_ids(
    ctx: &Context,
    client: &mut RunsClient,
    thread: &str,
) -> Result<Vec<String>, CliError> {
    let mut ids: Vec<String> = Vec::new();
    let mut page_token = String::new();
    for _ in 0..MAX_MESSAGE_PAGES {
        let page = client
            .list_messages(ctx.clients.unary(runs::ListMessagesRequest {
                thread_id: thread.to_owned(),
                page_size: 500,
                page_token,
            }))
            .await
            .map_err(CliError::from(Service::Runs))?
            .into_inner();
        for message in page.messages {
            if !message.run_id.is_empty() && !ids.contains(&message.run_id) {
                ids.push(message.run_id);
            }
        }
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    Ok(ids)
}

/// The status without its enum prefix, in lower case.
pub fn status_name(status: i32) -> &'static str {
    match RunStatus::try_from(status) {
        Ok(RunStatus::Running) => "running",
        Ok(RunStatus::Completed) => "completed",
        Ok(RunStatus::RequiresAction) => "requires action",
        Ok(RunStatus::MaxSteps) => "max steps",
        Ok(RunStatus::Failed) => "failed",
        Ok(RunStatus::Cancelled) => "cancelled",
        Ok(RunStatus::Interrupted) => "interrupted",
        Ok(RunStatus::Unspecified) | Err(_) => "unknown",
    }
}

fn summary(run: &runs::Run) -> String {
    let usage = run.usage.unwrap_or_default();
    let mut line = format!(
        "run {} {}: {} steps, {} tokens in, {} out",
        run.id,
        status_name(run.status),
        run.steps,
        usage.input_tokens,
        usage.output_tokens
    );
    if !run.error.is_empty() {
        line.push_str(&format!(" — {}", crate::error::one_line(&run.error)));
    }
    line
}

/// Success when the run completed or waits for client tools.
fn ended(run: &runs::Run) -> Result<(), CliError> {
    match RunStatus::try_from(run.status) {
        Ok(RunStatus::Completed | RunStatus::RequiresAction) => Ok(()),
        _ => Err(CliError::Failed(format!(
            "run {} ended {}",
            run.id,
            status_name(run.status)
        ))),
    }
}
