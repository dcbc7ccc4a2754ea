//! `switchboard usage`: what the organization used (tokens, tool calls,
//! runs) per day or month, for the organization's admins.

use clap::{Args, ValueEnum};
use switchboard_proto::runs::v1 as runs;

use super::Context;
use crate::{
    error::{CliError, Service},
    output::table,
};

/// How rows are split.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Group {
    /// The whole organization.
    Org,
    /// Per agent.
    Agent,
    /// Per user.
    User,
}

/// The usage command's arguments.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// The first UTC day, YYYY-MM-DD.
    #[arg(long)]
    pub from: String,
    /// The last UTC day, YYYY-MM-DD (inclusive).
    #[arg(long)]
    pub to: String,
    /// How rows are split.
    #[arg(long, value_enum, default_value = "org")]
    pub by: Group,
    /// Months instead of days.
    #[arg(long)]
    pub monthly: bool,
}

/// Prints the usage asked for.
pub async fn run(ctx: &Context, args: UsageArgs) -> Result<(), CliError> {
    let mut client = ctx.clients.runs()?;
    let group = match args.by {
        Group::Org => runs::UsageGroup::Unspecified,
        Group::Agent => runs::UsageGroup::Agent,
        Group::User => runs::UsageGroup::User,
    };
    let period = if args.monthly {
        runs::UsagePeriod::Month
    } else {
        runs::UsagePeriod::Unspecified
    };
    let usage = client
        .get_usage(ctx.clients.unary(runs::GetUsageRequest {
            from_day: args.from,
            to_day: args.to,
            group: group.into(),
            period: period.into(),
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner();
    if ctx.out.is_json() {
        return ctx.out.proto(&usage);
    }
    let mut rows = table(&[
        "PERIOD",
        "AGENT",
        "USER",
        "TOKENS IN",
        "TOKENS OUT",
        "TOOL CALLS",
        "RUNS",
    ]);
    for row in &usage.rows {
        rows.add_row(vec![
            row.period.clone(),
            row.agent_id.clone(),
            row.user_id.clone(),
            row.input_tokens.to_string(),
            row.output_tokens.to_string(),
            row.tool_calls.to_string(),
            row.runs.to_string(),
        ]);
    }
    ctx.out.line(rows)
}
