//! `switchboard runs`: a thread's runs, one run, following a run's events
//! from any replica, and cancelling a run.

use clap::Subcommand;
use switchboard_proto::runs::v1::{self as runs, RunStatus};

use super::Context;
use crate::{
    args::PageArgs,
    chat::render::Renderer,
    client::RunsClient,
    error::{CliError, Service},
    output::{table, time},
};

/// The run commands.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// List the runs of a thread, newest first
    List {
        /// The thread id.
        #[arg(required_unless_present = "thread_flag")]
        thread: Option<String>,
        /// The thread id (the older spelling of the argument).
        #[arg(long = "thread", hide = true, conflicts_with = "thread")]
        thread_flag: Option<String>,
        /// Paging.
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show one run
    Show {
        /// The run id.
        run: String,
    },
    /// Follow a run's events until it ends, from its start or from an event
    /// on (re-attaching to a run whose stream was lost)
    Watch {
        /// The run id.
        run: String,
        /// The sequence number of the first event to print.
        #[arg(long = "from", default_value_t = 0)]
        from: i64,
    },
    /// Cancel a running or paused run
    Cancel {
        /// The run id.
        run: String,
    },
}

/// Runs a run command.
pub async fn run(ctx: &Context, command: RunsCommand) -> Result<(), CliError> {
    let mut client = ctx.clients.runs()?;
    match command {
        RunsCommand::List {
            thread,
            thread_flag,
            page,
        } => {
            let thread = thread.or(thread_flag).unwrap_or_default();
            list(ctx, &mut client, thread, page).await
        }
        RunsCommand::Show { run } => {
            let run = get(ctx, &mut client, &run).await?;
            ctx.out.either(&run, || ctx.out.line(summary(&run)))
        }
        RunsCommand::Watch { run, from } => watch(ctx, &mut client, run, from).await,
        RunsCommand::Cancel { run } => {
            let run = client
                .cancel_run(ctx.clients.unary(runs::CancelRunRequest { id: run }))
                .await
                .map_err(CliError::from(Service::Runs))?
                .into_inner()
                .run
                .unwrap_or_default();
            ctx.out.either(&run, || ctx.out.line(summary(&run)))
        }
    }
}

async fn list(
    ctx: &Context,
    client: &mut RunsClient,
    thread_id: String,
    page: PageArgs,
) -> Result<(), CliError> {
    let page = client
        .list_runs(ctx.clients.unary(runs::ListRunsRequest {
            thread_id,
            page_size: page.page_size,
            page_token: page.page_token,
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner();
    if ctx.out.is_json() {
        return ctx.out.proto(&page);
    }
    let mut rows = table(&["ID", "STATUS", "STEPS", "TOKENS IN/OUT", "STARTED", "ERROR"]);
    for run in &page.runs {
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
    ctx.out.line(rows)?;
    ctx.out.next_page(&page.next_page_token)
}

/// Prints the run's events as `chat` does (with `--json`, one event per
/// line) until its last; Ctrl-C stops watching, not the run.
async fn watch(
    ctx: &Context,
    client: &mut RunsClient,
    id: String,
    from_sequence: i64,
) -> Result<(), CliError> {
    let failed = CliError::from(Service::Runs);
    let mut stream = client
        .watch_run(runs::WatchRunRequest { id, from_sequence })
        .await
        .map_err(&failed)?
        .into_inner();
    let mut renderer = Renderer::new(ctx.out);
    loop {
        let event = tokio::select! {
            event = stream.message() => event.map_err(&failed)?,
            _ = tokio::signal::ctrl_c() => return Err(CliError::Interrupted),
        };
        let Some(event) = event.and_then(|e| e.event) else {
            return Err(CliError::Failed(
                "the run's stream ended before the run did".into(),
            ));
        };
        if let Some(end) = renderer.event(&event)? {
            return end.map(drop);
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
