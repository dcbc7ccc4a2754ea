//! `switchboard approvals`: the gated tool calls waiting for a decision,
//! approved or denied by an approver.

use clap::{Subcommand, ValueEnum};
use switchboard_proto::mcp::v1 as mcp;

use super::Context;
use crate::{
    error::{CliError, Service},
    output::{short, table, time},
};

/// The approval commands.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// List your approvals and those you may decide (pending unless --state)
    List {
        /// Only these states (repeatable).
        #[arg(long = "state", value_enum)]
        states: Vec<StateArg>,
    },
    /// Show one approval
    Get {
        /// Its id.
        id: String,
    },
    /// Approve a pending approval: the requester's call may then run once
    Approve {
        /// Its id.
        id: String,
        /// Words for the requester.
        #[arg(long, default_value = "")]
        comment: String,
    },
    /// Deny a pending approval
    Deny {
        /// Its id.
        id: String,
        /// Why, for the requester (and the model).
        #[arg(long, default_value = "")]
        comment: String,
    },
}

/// An approval's state, as `--state` takes it.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StateArg {
    /// Waiting for an approver.
    Pending,
    /// Approved, not used yet.
    Approved,
    /// Denied.
    Denied,
    /// Approved and used.
    Used,
    /// Not decided, or not used, in time.
    Expired,
}

impl From<StateArg> for mcp::ApprovalState {
    fn from(state: StateArg) -> Self {
        match state {
            StateArg::Pending => Self::Pending,
            StateArg::Approved => Self::Approved,
            StateArg::Denied => Self::Denied,
            StateArg::Used => Self::Used,
            StateArg::Expired => Self::Expired,
        }
    }
}

/// Runs an approval command.
pub async fn run(ctx: &Context, command: ApprovalsCommand) -> Result<(), CliError> {
    let mut client = ctx.clients.approvals()?;
    let failed = CliError::from(Service::Mcp);
    match command {
        ApprovalsCommand::List { states } => {
            let response = client
                .list_approvals(
                    ctx.clients.unary(mcp::ListApprovalsRequest {
                        states: states
                            .into_iter()
                            .map(|s| i32::from(mcp::ApprovalState::from(s)))
                            .collect(),
                        page_size: 500,
                        page_token: String::new(),
                    }),
                )
                .await
                .map_err(failed)?
                .into_inner();
            ctx.out
                .either(&response, || print_list(ctx, &response.approvals))
        }
        ApprovalsCommand::Get { id } => {
            let approval = client
                .get_approval(
                    ctx.clients
                        .unary(mcp::GetApprovalRequest { approval_id: id }),
                )
                .await
                .map_err(failed)?
                .into_inner()
                .approval
                .unwrap_or_default();
            print_one(ctx, &approval)
        }
        ApprovalsCommand::Approve { id, comment } => decide(ctx, id, true, comment).await,
        ApprovalsCommand::Deny { id, comment } => decide(ctx, id, false, comment).await,
    }
}

async fn decide(ctx: &Context, id: String, approve: bool, comment: String) -> Result<(), CliError> {
    let approval = ctx
        .clients
        .approvals()?
        .decide_approval(ctx.clients.unary(mcp::DecideApprovalRequest {
            approval_id: id,
            approve,
            comment,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner()
        .approval
        .unwrap_or_default();
    print_one(ctx, &approval)
}

fn state_name(state: i32) -> String {
    mcp::ApprovalState::try_from(state)
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("APPROVAL_STATE_")
                .to_lowercase()
        })
        .unwrap_or_else(|_| state.to_string())
}

fn print_one(ctx: &Context, approval: &mcp::Approval) -> Result<(), CliError> {
    ctx.out.either(approval, || {
        ctx.out.line(format!(
            "{} {}: {} by {} ({}); rule {}: {}",
            approval.id,
            state_name(approval.state),
            approval.tool_name,
            approval.requester,
            short(&approval.arguments_json, 80),
            approval.rule,
            approval.reason,
        ))
    })
}

fn print_list(ctx: &Context, approvals: &[mcp::Approval]) -> Result<(), CliError> {
    let mut rows = table(&[
        "ID",
        "STATE",
        "TOOL",
        "REQUESTER",
        "ARGUMENTS",
        "REASON",
        "EXPIRES",
    ]);
    for a in approvals {
        rows.add_row(vec![
            a.id.clone(),
            state_name(a.state),
            a.tool_name.clone(),
            a.requester.clone(),
            short(&a.arguments_json, 40),
            short(&a.reason, 40),
            time(a.expire_time.as_ref()),
        ]);
    }
    ctx.out.line(rows)
}
