//! `switchboard chat`: an interactive conversation with an agent, or one
//! message sent from a script.

use clap::Args;
use switchboard_proto::runs::v1 as runs;

use super::Context;
use crate::{
    chat::{LineReader, Session},
    error::{CliError, Service},
    refs,
};

/// `chat`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("target").required(true).args(["agent", "thread"]))]
pub struct ChatArgs {
    /// The agent (id or name); a new thread is started with it.
    agent: Option<String>,
    /// Continue this thread instead.
    #[arg(long, conflicts_with = "agent")]
    thread: Option<String>,
    /// Title of a new thread.
    #[arg(long, default_value = "")]
    title: String,
    /// Send this message, show the answer and exit instead of asking for
    /// lines (repeatable: sent in order).
    #[arg(short, long)]
    message: Vec<String>,
}

/// Runs `chat`.
pub async fn run(ctx: &Context, args: ChatArgs) -> Result<(), CliError> {
    let thread_id = match args.thread {
        Some(thread) => thread,
        None => {
            let agent = args.agent.unwrap_or_default();
            new_thread(ctx, &agent, args.title).await?
        }
    };
    let mut session = Session::new(
        &ctx.clients,
        thread_id.clone(),
        ctx.out,
        ctx.request_id.clone(),
    )?;
    let mut lines = LineReader::new()?;
    if !args.message.is_empty() {
        for message in args.message {
            if !ctx.out.is_json() {
                ctx.out.line(format!("you> {message}"))?;
            }
            session.say(message, &mut lines).await?;
        }
        return Ok(());
    }
    if !ctx.out.is_json() {
        ctx.out.line(format!(
            "thread {thread_id}: type a message; Ctrl-C stops a run, Ctrl-D or /exit leaves"
        ))?;
    }
    while let Some(line) = lines.read("you> ").await? {
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/exit" || text == "/quit" {
            break;
        }
        match session.say(text.to_owned(), &mut lines).await {
            Ok(()) | Err(CliError::Interrupted) => {}
            // A failed or refused run ends that run, not the conversation.
            Err(error @ (CliError::Failed(_) | CliError::Grpc { .. })) => {
                crate::output::to_stderr(format!("error: {error}"));
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

async fn new_thread(ctx: &Context, agent: &str, title: String) -> Result<String, CliError> {
    let agent_id = refs::agent(&ctx.clients, agent).await?;
    let thread = ctx
        .clients
        .runs()?
        .create_thread(ctx.clients.unary(runs::CreateThreadRequest {
            agent_id,
            title,
            request_id: String::new(),
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner()
        .thread
        .unwrap_or_default();
    if !ctx.out.is_json() {
        ctx.out.line(format!(
            "new thread {} (continue it with: switchboard chat --thread {})",
            thread.id, thread.id
        ))?;
    }
    Ok(thread.id)
}
