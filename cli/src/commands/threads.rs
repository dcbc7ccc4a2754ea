//! `switchboard threads`: starting, listing, reading and deleting threads,
//! and accepting a tool's changed definition in one.

use clap::Subcommand;
use switchboard_proto::runs::v1::{self as runs, content_part::Part};

use super::Context;
use crate::{
    args::PageArgs,
    error::{CliError, Service},
    output::{short, table, time},
    refs,
};

/// The thread commands.
#[derive(Debug, Subcommand)]
pub enum ThreadsCommand {
    /// Start a thread with an agent
    Create {
        /// The agent's id or name.
        agent: String,
        /// A title.
        #[arg(long, default_value = "")]
        title: String,
    },
    /// List your threads, newest first
    List {
        /// Paging.
        #[command(flatten)]
        page: PageArgs,
        /// Only threads with this agent (id or name).
        #[arg(long)]
        agent: Option<String>,
    },
    /// Show one thread
    Show {
        /// The thread id.
        thread: String,
    },
    /// Print a thread's messages, oldest first: text, tool calls and results
    Messages {
        /// The thread id.
        thread: String,
        /// Paging.
        #[command(flatten)]
        page: PageArgs,
    },
    /// Delete a thread with its messages, runs and data sources
    Delete {
        /// The thread id.
        thread: String,
    },
    /// Accept a tool's changed definition that a run withheld (agent
    /// tool drift ASK): the thread's next run offers it
    AcceptTool {
        /// The thread id.
        thread: String,
        /// The tool's name as the model sees it (`integration__tool`).
        tool: String,
        /// The new definition's digest, as the run reported it.
        digest: String,
    },
}

/// Runs a thread command.
pub async fn run(ctx: &Context, command: ThreadsCommand) -> Result<(), CliError> {
    let mut client = ctx.clients.runs()?;
    let failed = CliError::from(Service::Runs);
    match command {
        ThreadsCommand::Create { agent, title } => {
            let agent_id = refs::agent(&ctx.clients, &agent).await?;
            let thread = client
                .create_thread(ctx.clients.unary(runs::CreateThreadRequest {
                    agent_id,
                    title,
                    request_id: ctx.request_id.clone(),
                }))
                .await
                .map_err(failed)?
                .into_inner()
                .thread
                .unwrap_or_default();
            print_thread(ctx, &thread)
        }
        ThreadsCommand::List { page, agent } => list(ctx, page, agent).await,
        ThreadsCommand::Show { thread } => {
            let thread = client
                .get_thread(ctx.clients.unary(runs::GetThreadRequest { id: thread }))
                .await
                .map_err(failed)?
                .into_inner()
                .thread
                .unwrap_or_default();
            print_thread(ctx, &thread)
        }
        ThreadsCommand::Messages { thread, page } => messages(ctx, thread, page).await,
        ThreadsCommand::Delete { thread } => {
            let response = client
                .delete_thread(
                    ctx.clients
                        .unary(runs::DeleteThreadRequest { id: thread.clone() }),
                )
                .await
                .map_err(failed)?
                .into_inner();
            ctx.out.either(&response, || {
                ctx.out.line(format!("deleted thread {thread}"))
            })
        }
        ThreadsCommand::AcceptTool {
            thread,
            tool,
            digest,
        } => accept_tool(ctx, thread, tool, digest).await,
    }
}

async fn accept_tool(
    ctx: &Context,
    thread: String,
    tool: String,
    digest: String,
) -> Result<(), CliError> {
    let response = ctx
        .clients
        .runs()?
        .accept_tool_definition(ctx.clients.unary(runs::AcceptToolDefinitionRequest {
            thread_id: thread.clone(),
            tool_name: tool.clone(),
            digest,
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner();
    ctx.out.either(&response, || {
        ctx.out.line(format!(
            "accepted the new definition of {tool} in thread {thread}: the next run offers it"
        ))
    })
}

async fn list(ctx: &Context, page: PageArgs, agent: Option<String>) -> Result<(), CliError> {
    let agent_id = match agent {
        Some(agent) => refs::agent(&ctx.clients, &agent).await?,
        None => String::new(),
    };
    let response = ctx
        .clients
        .runs()?
        .list_threads(ctx.clients.unary(runs::ListThreadsRequest {
            page_size: page.page_size,
            page_token: page.page_token,
            agent_id,
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner();
    ctx.out.either(&response, || {
        let mut rows = table(&["ID", "AGENT", "TITLE", "UPDATED"]);
        for t in &response.threads {
            rows.add_row(vec![
                t.id.clone(),
                t.agent_id.clone(),
                t.title.clone(),
                time(t.update_time.as_ref()),
            ]);
        }
        ctx.out.line(rows)?;
        ctx.out.next_page(&response.next_page_token)
    })
}

async fn messages(ctx: &Context, thread_id: String, page: PageArgs) -> Result<(), CliError> {
    let response = ctx
        .clients
        .runs()?
        .list_messages(ctx.clients.unary(runs::ListMessagesRequest {
            thread_id,
            page_size: page.page_size,
            page_token: page.page_token,
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner();
    ctx.out.either(&response, || {
        for message in &response.messages {
            print_message(ctx, message)?;
        }
        ctx.out.next_page(&response.next_page_token)
    })
}

fn print_thread(ctx: &Context, t: &runs::Thread) -> Result<(), CliError> {
    ctx.out.either(t, || {
        let mut rows = table(&["FIELD", "VALUE"]);
        for (field, value) in [
            ("id", t.id.clone()),
            ("agent", t.agent_id.clone()),
            ("title", t.title.clone()),
            ("user", t.user_id.clone()),
            ("created", time(t.create_time.as_ref())),
            ("updated", time(t.update_time.as_ref())),
        ] {
            rows.add_row(vec![field.to_owned(), value]);
        }
        ctx.out.line(rows)
    })
}

/// One message as transcript lines: `user: …`, `assistant: …`, tool calls
/// with their arguments and results cut to one line.
fn print_message(ctx: &Context, message: &runs::Message) -> Result<(), CliError> {
    let role = match runs::MessageRole::try_from(message.role) {
        Ok(runs::MessageRole::User) => "user",
        Ok(runs::MessageRole::Assistant) => "assistant",
        Ok(runs::MessageRole::Tool) => "tool",
        _ => "?",
    };
    for part in message.content.iter().filter_map(|p| p.part.as_ref()) {
        match part {
            Part::Text(text) => ctx.out.line(format!("{role}: {}", text.text))?,
            Part::ToolCall(call) => {
                let arguments = crate::chat::render::arguments_text(
                    &call.arguments_json,
                    call.arguments.as_ref(),
                );
                ctx.out
                    .line(format!("  → {}({})", call.name, short(&arguments, 100)))?;
            }
            Part::ToolResult(result) => {
                let mark = if result.is_error { "✗" } else { "←" };
                ctx.out.line(format!(
                    "  {mark} {}: {}",
                    result.name,
                    short(&result.content, 100)
                ))?;
            }
        }
    }
    Ok(())
}
