//! `switchboard toolsets`: named selections of the organization's
//! integrations, their tools and resources, which mcp-service serves to MCP
//! clients at `/mcp/toolsets/{name}`.

use clap::{Args, Subcommand};
use switchboard_proto::{mcp::v1 as mcp, runs::v1 as runs};

use super::Context;
use crate::{
    args::{KeyValue, PageArgs},
    error::{CliError, Service},
    output::{short, table, time},
    refs,
};

/// The toolset commands.
#[derive(Debug, Subcommand)]
pub enum ToolsetsCommand {
    /// Create a toolset of integrations (admins)
    Create(WriteArgs),
    /// Show a toolset: its members, their slugs and selections
    Get {
        /// Its name.
        name: String,
    },
    /// List the organization's toolsets
    List(PageArgs),
    /// Change a toolset's description, or replace its members (admins)
    Update(WriteArgs),
    /// Delete a toolset (admins)
    Delete {
        /// Its name.
        name: String,
    },
}

/// `toolsets create` and `toolsets update`.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// The toolset's name: lowercase letters, digits and hyphens.
    name: String,
    /// What it is for.
    #[arg(long)]
    description: Option<String>,
    /// An integration it serves, by id or slug (repeatable); on update, the
    /// members replace the current ones.
    #[arg(long = "member", value_name = "INTEGRATION")]
    members: Vec<String>,
    /// Serve only these tools of a member: `INTEGRATION=TOOL,TOOL`
    /// (repeatable; `INTEGRATION=` serves none). Every tool without it.
    #[arg(long = "tools", value_name = "INTEGRATION=TOOLS")]
    tools: Vec<KeyValue>,
    /// Serve this resource or URI template of a member: `INTEGRATION=URI`
    /// (repeatable, one URI each). Every resource without it.
    #[arg(long = "resource", value_name = "INTEGRATION=URI")]
    resources: Vec<KeyValue>,
    /// Show a member's tool under another name: `INTEGRATION=TOOL:NAME`
    /// (repeatable). Calls still reach the server's TOOL.
    #[arg(long = "rename", value_name = "INTEGRATION=TOOL:NAME")]
    renames: Vec<KeyValue>,
    /// Show a member's tool with another description:
    /// `INTEGRATION=TOOL:TEXT` (repeatable).
    #[arg(long = "describe", value_name = "INTEGRATION=TOOL:TEXT")]
    describes: Vec<KeyValue>,
    /// Hide a member's tool: `INTEGRATION=TOOL` (repeatable).
    #[arg(long = "hide", value_name = "INTEGRATION=TOOL")]
    hides: Vec<KeyValue>,
    /// Take the members from an agent (by id or unique name): its
    /// integrations, each narrowed to the agent's tool allow-list for it.
    /// A copy made now: later changes of the agent do not change the toolset.
    #[arg(long, value_name = "AGENT", conflicts_with_all = ["members", "no_members"])]
    from_agent: Option<String>,
    /// On update: leave the toolset with no members.
    #[arg(long, conflicts_with = "members")]
    no_members: bool,
}

/// Runs a toolset command.
pub async fn run(ctx: &Context, command: ToolsetsCommand) -> Result<(), CliError> {
    match command {
        ToolsetsCommand::Create(args) => create(ctx, args).await,
        ToolsetsCommand::Get { name } => {
            let toolset = ctx
                .clients
                .toolsets()?
                .get_toolset(ctx.clients.unary(mcp::GetToolsetRequest { name }))
                .await
                .map_err(CliError::from(Service::Mcp))?
                .into_inner()
                .toolset
                .unwrap_or_default();
            print_toolset(ctx, &toolset)
        }
        ToolsetsCommand::List(page) => list(ctx, page).await,
        ToolsetsCommand::Update(args) => update(ctx, args).await,
        ToolsetsCommand::Delete { name } => {
            let response = ctx
                .clients
                .toolsets()?
                .delete_toolset(
                    ctx.clients
                        .unary(mcp::DeleteToolsetRequest { name: name.clone() }),
                )
                .await
                .map_err(CliError::from(Service::Mcp))?
                .into_inner();
            ctx.out.either(&response, || {
                ctx.out.line(format!("deleted toolset {name}"))
            })
        }
    }
}

/// The members the arguments name, each integration resolved to its id
/// and given the selections written for it.
async fn members(ctx: &Context, args: &WriteArgs) -> Result<Vec<mcp::ToolsetMember>, CliError> {
    if let Some(agent) = &args.from_agent {
        return agent_members(ctx, agent).await;
    }
    let written = [
        &args.tools,
        &args.resources,
        &args.renames,
        &args.describes,
        &args.hides,
    ];
    for selection in written.into_iter().flatten() {
        if !args.members.contains(&selection.key) {
            return Err(CliError::Usage(format!(
                "{:?} has a selection but is not a --member",
                selection.key
            )));
        }
    }
    let mut members = Vec::with_capacity(args.members.len());
    for reference in &args.members {
        let written: Vec<&KeyValue> = args.tools.iter().filter(|t| &t.key == reference).collect();
        let tools = (!written.is_empty()).then(|| {
            written
                .iter()
                .flat_map(|t| t.value.split(','))
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        });
        let resources: Vec<String> = args
            .resources
            .iter()
            .filter(|r| &r.key == reference)
            .map(|r| r.value.clone())
            .collect();
        members.push(mcp::ToolsetMember {
            integration_id: refs::integration(&ctx.clients, reference).await?,
            integration_slug: String::new(),
            tools: tools.map(|names| mcp::ToolsetSelection { names }),
            resources: (!resources.is_empty())
                .then_some(mcp::ToolsetSelection { names: resources }),
            tool_overrides: overrides(args, reference)?,
        });
    }
    Ok(members)
}

/// The overrides the arguments write for the member `reference`, one per
/// tool, in the order its tools were first named.
fn overrides(args: &WriteArgs, reference: &str) -> Result<Vec<mcp::ToolsetToolOverride>, CliError> {
    let mut overrides: Vec<mcp::ToolsetToolOverride> = Vec::new();
    for (flag, list) in [("rename", &args.renames), ("describe", &args.describes)] {
        for kv in list.iter().filter(|kv| kv.key == reference) {
            let (tool, text) = kv.value.split_once(':').ok_or_else(|| {
                CliError::Usage(format!(
                    "--{flag} {reference}={}: expected TOOL:…",
                    kv.value
                ))
            })?;
            let entry = override_of(&mut overrides, tool);
            if flag == "rename" {
                entry.name = text.to_owned();
            } else {
                entry.description = text.to_owned();
            }
        }
    }
    for kv in args.hides.iter().filter(|kv| kv.key == reference) {
        override_of(&mut overrides, &kv.value).hidden = true;
    }
    Ok(overrides)
}

/// The override of `tool` among `overrides`, added when there is none.
fn override_of<'a>(
    overrides: &'a mut Vec<mcp::ToolsetToolOverride>,
    tool: &str,
) -> &'a mut mcp::ToolsetToolOverride {
    let at = match overrides.iter().position(|o| o.tool == tool) {
        Some(at) => at,
        None => {
            overrides.push(mcp::ToolsetToolOverride {
                tool: tool.to_owned(),
                ..Default::default()
            });
            overrides.len() - 1
        }
    };
    &mut overrides[at]
}

/// The members of the toolset an agent's selection makes: every
/// integration of the agent, with the agent's tool allow-list for it as the
/// tool selection (every tool when the agent has none).
async fn agent_members(
    ctx: &Context,
    reference: &str,
) -> Result<Vec<mcp::ToolsetMember>, CliError> {
    let id = refs::agent(&ctx.clients, reference).await?;
    let agent = ctx
        .clients
        .runs()?
        .get_agent(ctx.clients.unary(runs::GetAgentRequest { id }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner()
        .agent
        .unwrap_or_default();
    Ok(agent
        .mcp_integration_ids
        .iter()
        .map(|integration_id| mcp::ToolsetMember {
            integration_id: integration_id.clone(),
            integration_slug: String::new(),
            tools: agent
                .tool_filters
                .iter()
                .find(|filter| &filter.integration_id == integration_id)
                .map(|filter| mcp::ToolsetSelection {
                    names: filter.allowed_tools.clone(),
                }),
            resources: None,
            tool_overrides: Vec::new(),
        })
        .collect())
}

async fn create(ctx: &Context, args: WriteArgs) -> Result<(), CliError> {
    let members = members(ctx, &args).await?;
    let created = ctx
        .clients
        .toolsets()?
        .create_toolset(ctx.clients.unary(mcp::CreateToolsetRequest {
            toolset: Some(mcp::Toolset {
                name: args.name,
                description: args.description.unwrap_or_default(),
                members,
                ..Default::default()
            }),
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner()
        .toolset
        .unwrap_or_default();
    ctx.out.either(&created, || {
        ctx.out.line(format!(
            "created toolset {} of {} integrations",
            created.name,
            created.members.len()
        ))
    })
}

async fn update(ctx: &Context, args: WriteArgs) -> Result<(), CliError> {
    let mut paths = Vec::new();
    if args.description.is_some() {
        paths.push("description".to_owned());
    }
    if !args.members.is_empty() || args.no_members || args.from_agent.is_some() {
        paths.push("members".to_owned());
    }
    if paths.is_empty() {
        return Err(CliError::Usage(
            "nothing to change: give --description, --member, --from-agent or --no-members".into(),
        ));
    }
    let members = members(ctx, &args).await?;
    let updated = ctx
        .clients
        .toolsets()?
        .update_toolset(ctx.clients.unary(mcp::UpdateToolsetRequest {
            toolset: Some(mcp::Toolset {
                name: args.name,
                description: args.description.unwrap_or_default(),
                members,
                ..Default::default()
            }),
            update_mask: Some(prost_types::FieldMask { paths }),
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner()
        .toolset
        .unwrap_or_default();
    ctx.out.either(&updated, || {
        ctx.out.line(format!("updated toolset {}", updated.name))
    })
}

async fn list(ctx: &Context, page: PageArgs) -> Result<(), CliError> {
    let response = ctx
        .clients
        .toolsets()?
        .list_toolsets(ctx.clients.unary(mcp::ListToolsetsRequest {
            page_size: page.page_size,
            page_token: page.page_token,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out.either(&response, || {
        let mut rows = table(&["NAME", "INTEGRATIONS", "DESCRIPTION", "UPDATED"]);
        for t in &response.toolsets {
            let slugs: Vec<&str> = t.members.iter().map(slug).collect();
            rows.add_row(vec![
                t.name.clone(),
                short(&slugs.join(", "), 40),
                short(&t.description, 40),
                time(t.update_time.as_ref()),
            ]);
        }
        ctx.out.line(rows)?;
        ctx.out.next_page(&response.next_page_token)
    })
}

/// A member's overrides in a few words: `echo as say, add hidden`.
fn shown_overrides(overrides: &[mcp::ToolsetToolOverride]) -> String {
    let shown: Vec<String> = overrides
        .iter()
        .map(|o| match (o.hidden, o.name.as_str()) {
            (true, _) => format!("{} hidden", o.tool),
            (false, "") => format!("{} described", o.tool),
            (false, name) => format!("{} as {name}", o.tool),
        })
        .collect();
    shown.join(", ")
}

/// A member's slug, or a mark for an integration deleted since.
fn slug(member: &mcp::ToolsetMember) -> &str {
    if member.integration_slug.is_empty() {
        "(deleted)"
    } else {
        &member.integration_slug
    }
}

/// A selection as shown: every entry, or `all` when unset.
fn selection(selection: Option<&mcp::ToolsetSelection>) -> String {
    match selection {
        None => "all".to_owned(),
        Some(s) if s.names.is_empty() => "none".to_owned(),
        Some(s) => s.names.join(", "),
    }
}

fn print_toolset(ctx: &Context, toolset: &mcp::Toolset) -> Result<(), CliError> {
    ctx.out.either(toolset, || {
        ctx.out.line(format!(
            "{}: {} (updated by {} at {})",
            toolset.name,
            toolset.description,
            toolset.updated_by,
            time(toolset.update_time.as_ref())
        ))?;
        let mut rows = table(&["INTEGRATION", "ID", "TOOLS", "RESOURCES", "OVERRIDES"]);
        for m in &toolset.members {
            rows.add_row(vec![
                slug(m).to_owned(),
                m.integration_id.clone(),
                short(&selection(m.tools.as_ref()), 50),
                short(&selection(m.resources.as_ref()), 50),
                short(&shown_overrides(&m.tool_overrides), 50),
            ]);
        }
        ctx.out.line(rows)
    })
}
