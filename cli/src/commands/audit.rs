//! `switchboard audit`: the organization's audit trail, listed with filters,
//! and its hash chain verified.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};
use switchboard_proto::mcp::v1 as mcp;

use super::Context;
use crate::{
    error::{CliError, Service},
    output::{short, table, time},
    refs,
};

/// The audit commands.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// List events, newest first
    List(ListArgs),
    /// Check the chain from its first kept event to its last; fails when
    /// it is broken
    Verify,
}

/// `audit list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only events within this long ago (`1h`, `7d`).
    #[arg(long, value_parser = humantime::parse_duration)]
    since: Option<Duration>,
    /// Only this user's.
    #[arg(long)]
    subject: Option<String>,
    /// Only this integration's (id or slug).
    #[arg(long)]
    integration: Option<String>,
    /// Only this tool name, resource URI, prompt name or policy name.
    #[arg(long)]
    target: Option<String>,
    /// Only these outcomes (repeatable): ok, failed, denied, pending_approval.
    #[arg(long = "outcome", value_parser = outcome)]
    outcomes: Vec<mcp::AuditOutcome>,
    /// At most this many events (one page; at most 1000).
    #[arg(long, default_value_t = 100)]
    limit: i32,
    /// The page after the one that printed this token.
    #[arg(long, default_value = "")]
    page_token: String,
}

fn outcome(name: &str) -> Result<mcp::AuditOutcome, String> {
    mcp::AuditOutcome::from_str_name(&format!("AUDIT_OUTCOME_{}", name.to_uppercase()))
        .filter(|o| *o != mcp::AuditOutcome::Unspecified)
        .ok_or_else(|| "one of ok, failed, denied, pending_approval".to_owned())
}

/// Runs an audit command.
pub async fn run(ctx: &Context, command: AuditCommand) -> Result<(), CliError> {
    match command {
        AuditCommand::List(args) => list(ctx, args).await,
        AuditCommand::Verify => verify(ctx).await,
    }
}

async fn list(ctx: &Context, args: ListArgs) -> Result<(), CliError> {
    let integration_id = match &args.integration {
        Some(reference) => refs::integration(&ctx.clients, reference).await?,
        None => String::new(),
    };
    let start_time = args.since.map(|since| {
        let at = SystemTime::now()
            .checked_sub(since)
            .unwrap_or(UNIX_EPOCH)
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        prost_types::Timestamp {
            seconds: i64::try_from(at.as_secs()).unwrap_or(i64::MAX),
            nanos: 0,
        }
    });
    let response = ctx
        .clients
        .audit()?
        .list_audit_events(ctx.clients.unary(mcp::ListAuditEventsRequest {
            start_time,
            end_time: None,
            subject: args.subject.unwrap_or_default(),
            integration_id,
            target: args.target.unwrap_or_default(),
            outcomes: args.outcomes.into_iter().map(i32::from).collect(),
            page_size: args.limit,
            page_token: args.page_token,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out.either(&response, || print_events(ctx, &response))
}

fn name(text: &str, prefix: &str) -> String {
    text.strip_prefix(prefix).unwrap_or(text).to_lowercase()
}

fn print_events(ctx: &Context, response: &mcp::ListAuditEventsResponse) -> Result<(), CliError> {
    let mut rows = table(&[
        "SEQ", "AT", "ACTION", "OUTCOME", "SUBJECT", "TARGET", "RULE", "REASON",
    ]);
    for e in &response.events {
        rows.add_row(vec![
            e.sequence.to_string(),
            time(e.time.as_ref()),
            name(e.action().as_str_name(), "AUDIT_ACTION_"),
            name(e.outcome().as_str_name(), "AUDIT_OUTCOME_"),
            e.subject.clone(),
            short(&e.target, 40),
            e.rule.clone(),
            short(&e.reason, 60),
        ]);
    }
    let mut text = rows.to_string();
    if !response.next_page_token.is_empty() {
        text.push_str(&format!(
            "\nmore: --page-token {}",
            response.next_page_token
        ));
    }
    ctx.out.line(text)
}

async fn verify(ctx: &Context) -> Result<(), CliError> {
    let response = ctx
        .clients
        .audit()?
        .verify_audit_chain(ctx.clients.unary(mcp::VerifyAuditChainRequest {}))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    if !response.intact {
        if ctx.out.is_json() {
            ctx.out.either(&response, || Ok(()))?;
        }
        return Err(CliError::Failed(format!(
            "the audit chain is broken at event {}: {} ({} events checked)",
            response.first_broken_sequence, response.problem, response.events_checked
        )));
    }
    ctx.out.either(&response, || {
        ctx.out.line(format!(
            "the audit chain is intact ({} events checked)",
            response.events_checked
        ))
    })
}
