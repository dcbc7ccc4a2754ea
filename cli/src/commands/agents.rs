//! `switchboard agents`: creating, listing, showing and deleting agents.

use clap::{Args, Subcommand, ValueEnum};
use switchboard_proto::runs::v1 as runs;

use super::Context;
use crate::{
    args::PageArgs,
    error::{CliError, Service},
    output::{short, table, time},
    refs,
};

/// The agent commands.
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Create an agent
    Create(CreateArgs),
    /// Change an agent: only the fields given are changed
    Update(UpdateArgs),
    /// List the organization's agents
    List(PageArgs),
    /// Show one agent
    Show {
        /// Its id or name.
        agent: String,
    },
    /// Delete an agent (its threads stay readable)
    Delete {
        /// Its id or name.
        agent: String,
    },
}

/// `agents create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The agent's name.
    #[arg(long)]
    name: String,
    /// System instructions given to the model.
    #[arg(long, default_value = "")]
    instructions: String,
    /// A model provider configured in runs-service (SWITCHBOARD_MODEL_PROVIDERS).
    #[arg(long)]
    provider: String,
    /// The provider's model id.
    #[arg(long)]
    model: String,
    /// A model tried when the ones before fail before any output, as
    /// PROVIDER/MODEL, in order (repeatable; at most 3).
    #[arg(long = "fallback-model", value_name = "PROVIDER/MODEL", value_parser = model_ref)]
    fallback_models: Vec<runs::ModelRef>,
    /// An integration (id or slug) whose tools the agent may use (repeatable).
    #[arg(long = "integration", value_name = "INTEGRATION")]
    integrations: Vec<String>,
    /// A tool the caller runs: the run pauses until `chat` gives its result (repeatable).
    #[arg(long = "client-tool", value_name = "NAME[:DESCRIPTION]")]
    client_tools: Vec<String>,
    /// Most model calls in one run [default: the service's]
    #[arg(long)]
    max_steps: Option<i32>,
    /// Hide the resource tools (`retrieve_mcp_resource`, `mcp_list_resources`).
    #[arg(long)]
    no_resource_tools: bool,
    /// What a run does when a server changed a tool the thread pinned
    /// [default: the service's, refuse]
    #[arg(long, value_enum)]
    tool_drift: Option<ToolDrift>,
    /// Offer the model `search_tools` and `call_tool` instead of every MCP
    /// tool (for agents with many tools).
    #[arg(long)]
    tool_search: bool,
}

/// What a run does with a tool its server changed since the thread pinned
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolDrift {
    /// Withhold the changed tool from the model.
    Refuse,
    /// Withhold it until the application accepts it (`threads accept-tool`).
    Ask,
    /// Pin the new definition and offer it.
    Accept,
}

impl From<ToolDrift> for runs::ToolDriftPolicy {
    fn from(drift: ToolDrift) -> Self {
        match drift {
            ToolDrift::Refuse => Self::Refuse,
            ToolDrift::Ask => Self::Ask,
            ToolDrift::Accept => Self::Accept,
        }
    }
}

/// `agents update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The agent's id or name.
    agent: String,
    /// A new name.
    #[arg(long)]
    name: Option<String>,
    /// New system instructions.
    #[arg(long)]
    instructions: Option<String>,
    /// A new model provider (with --model).
    #[arg(long, requires = "model")]
    provider: Option<String>,
    /// A new model id (with --provider).
    #[arg(long, requires = "provider")]
    model: Option<String>,
    /// The fallback models, replacing the current ones, as PROVIDER/MODEL
    /// (repeatable; at most 3).
    #[arg(long = "fallback-model", value_name = "PROVIDER/MODEL", value_parser = model_ref)]
    fallback_models: Vec<runs::ModelRef>,
    /// Remove the agent's fallback models.
    #[arg(long, conflicts_with = "fallback_models")]
    no_fallback_models: bool,
    /// The integrations (ids or slugs), replacing the current ones (repeatable).
    #[arg(long = "integration", value_name = "INTEGRATION")]
    integrations: Vec<String>,
    /// The client tools, replacing the current ones (repeatable).
    #[arg(long = "client-tool", value_name = "NAME[:DESCRIPTION]")]
    client_tools: Vec<String>,
    /// A new step limit (0: the service's).
    #[arg(long)]
    max_steps: Option<i32>,
    /// What a run does when a server changed a tool the thread pinned.
    #[arg(long, value_enum)]
    tool_drift: Option<ToolDrift>,
    /// Whether the model finds the MCP tools with `search_tools` instead of
    /// being offered each.
    #[arg(long, value_name = "BOOL")]
    tool_search: Option<bool>,
}

/// Runs an agent command.
pub async fn run(ctx: &Context, command: AgentsCommand) -> Result<(), CliError> {
    let mut client = ctx.clients.runs()?;
    let failed = CliError::from(Service::Runs);
    match command {
        AgentsCommand::Create(args) => {
            let agent = agent_from(ctx, args).await?;
            let agent = client
                .create_agent(ctx.clients.unary(runs::CreateAgentRequest {
                    agent: Some(agent),
                    request_id: ctx.request_id.clone(),
                }))
                .await
                .map_err(failed)?
                .into_inner()
                .agent
                .unwrap_or_default();
            print_agent(ctx, &agent)
        }
        AgentsCommand::Update(args) => update(ctx, args).await,
        AgentsCommand::List(page) => list(ctx, page).await,
        AgentsCommand::Show { agent } => {
            let id = refs::agent(&ctx.clients, &agent).await?;
            let agent = client
                .get_agent(ctx.clients.unary(runs::GetAgentRequest { id }))
                .await
                .map_err(failed)?
                .into_inner()
                .agent
                .unwrap_or_default();
            print_agent(ctx, &agent)
        }
        AgentsCommand::Delete { agent } => {
            let id = refs::agent(&ctx.clients, &agent).await?;
            let response = client
                .delete_agent(
                    ctx.clients
                        .unary(runs::DeleteAgentRequest { id: id.clone() }),
                )
                .await
                .map_err(failed)?
                .into_inner();
            ctx.out
                .either(&response, || ctx.out.line(format!("deleted agent {id}")))
        }
    }
}

async fn list(ctx: &Context, page: PageArgs) -> Result<(), CliError> {
    let response = ctx
        .clients
        .runs()?
        .list_agents(ctx.clients.unary(runs::ListAgentsRequest {
            page_size: page.page_size,
            page_token: page.page_token,
        }))
        .await
        .map_err(CliError::from(Service::Runs))?
        .into_inner();
    ctx.out.either(&response, || {
        let mut rows = table(&["ID", "NAME", "MODEL", "INTEGRATIONS", "CREATED"]);
        for a in &response.agents {
            rows.add_row(vec![
                a.id.clone(),
                a.name.clone(),
                model(a),
                a.mcp_integration_ids.len().to_string(),
                time(a.create_time.as_ref()),
            ]);
        }
        ctx.out.line(rows)?;
        ctx.out.next_page(&response.next_page_token)
    })
}

async fn update(ctx: &Context, args: UpdateArgs) -> Result<(), CliError> {
    let id = refs::agent(&ctx.clients, &args.agent).await?;
    let mut agent = runs::Agent {
        id,
        ..Default::default()
    };
    let mut paths = Vec::new();
    if !args.integrations.is_empty() {
        for reference in &args.integrations {
            let id = refs::integration(&ctx.clients, reference).await?;
            agent.mcp_integration_ids.push(id);
        }
        paths.push("mcp_integration_ids");
    }
    paths.extend(patch(&mut agent, args));
    if paths.is_empty() {
        return Err(CliError::Usage("name at least one field to change".into()));
    }
    let response = ctx
        .clients
        .runs()?
        .update_agent(ctx.clients.unary(runs::UpdateAgentRequest {
            agent: Some(agent),
            update_mask: Some(prost_types::FieldMask {
                paths: paths.into_iter().map(str::to_owned).collect(),
            }),
        }))
        .await
        .map_err(CliError::from(Service::Runs))?;
    print_agent(ctx, &response.into_inner().agent.unwrap_or_default())
}

/// Writes into `agent` the fields `args` change, other than its
/// integrations; the update mask's paths for them.
fn patch(agent: &mut runs::Agent, args: UpdateArgs) -> Vec<&'static str> {
    let mut paths = Vec::new();
    if let Some(name) = args.name {
        agent.name = name;
        paths.push("name");
    }
    if let Some(instructions) = args.instructions {
        agent.instructions = instructions;
        paths.push("instructions");
    }
    if let (Some(provider), Some(model)) = (args.provider, args.model) {
        agent.model = Some(runs::ModelRef { provider, model });
        paths.push("model");
    }
    if !args.fallback_models.is_empty() || args.no_fallback_models {
        agent.fallback_models = args.fallback_models;
        paths.push("fallback_models");
    }
    if !args.client_tools.is_empty() {
        agent.client_tools = args.client_tools.iter().map(|s| client_tool(s)).collect();
        paths.push("client_tools");
    }
    if let Some(max_steps) = args.max_steps {
        agent.max_steps = max_steps;
        paths.push("max_steps");
    }
    if let Some(drift) = args.tool_drift {
        agent.tool_drift = runs::ToolDriftPolicy::from(drift).into();
        paths.push("tool_drift");
    }
    if let Some(search) = args.tool_search {
        agent.tool_search = search;
        paths.push("tool_search");
    }
    paths
}

/// A client tool from `NAME[:DESCRIPTION]`, taking any JSON object.
fn client_tool(spec: &str) -> runs::ClientTool {
    let (name, description) = spec.split_once(':').unwrap_or((spec, ""));
    runs::ClientTool {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters_schema: switchboard_proto::json::json_to_struct(
            &serde_json::json!({"type": "object", "additionalProperties": true}),
        ),
    }
}

async fn agent_from(ctx: &Context, args: CreateArgs) -> Result<runs::Agent, CliError> {
    let mut integration_ids = Vec::with_capacity(args.integrations.len());
    for reference in &args.integrations {
        integration_ids.push(refs::integration(&ctx.clients, reference).await?);
    }
    let client_tools = args.client_tools.iter().map(|s| client_tool(s)).collect();
    Ok(runs::Agent {
        name: args.name,
        instructions: args.instructions,
        model: Some(runs::ModelRef {
            provider: args.provider,
            model: args.model,
        }),
        fallback_models: args.fallback_models,
        tool_search: args.tool_search,
        mcp_integration_ids: integration_ids,
        client_tools,
        max_steps: args.max_steps.unwrap_or(0),
        disable_resource_tools: args.no_resource_tools,
        tool_drift: args
            .tool_drift
            .map_or(
                runs::ToolDriftPolicy::Unspecified,
                runs::ToolDriftPolicy::from,
            )
            .into(),
        ..Default::default()
    })
}

fn model(agent: &runs::Agent) -> String {
    let name = |m: &runs::ModelRef| format!("{}/{}", m.provider, m.model);
    let mut model = agent.model.as_ref().map_or_else(|| "-".into(), name);
    for fallback in &agent.fallback_models {
        model.push_str(&format!(", then {}", name(fallback)));
    }
    model
}

/// `PROVIDER/MODEL` (the model id may hold more `/`).
fn model_ref(text: &str) -> Result<runs::ModelRef, String> {
    match text.split_once('/') {
        Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
            Ok(runs::ModelRef {
                provider: provider.to_owned(),
                model: model.to_owned(),
            })
        }
        _ => Err(format!("`{text}` is not PROVIDER/MODEL")),
    }
}

fn print_agent(ctx: &Context, a: &runs::Agent) -> Result<(), CliError> {
    ctx.out.either(a, || {
        let tools: Vec<&str> = a.client_tools.iter().map(|t| t.name.as_str()).collect();
        let mut rows = table(&["FIELD", "VALUE"]);
        for (field, value) in [
            ("id", a.id.clone()),
            ("name", a.name.clone()),
            ("model", model(a)),
            ("instructions", short(&a.instructions, 70)),
            ("integrations", a.mcp_integration_ids.join(", ")),
            ("client tools", tools.join(", ")),
            ("max steps", a.max_steps.to_string()),
            (
                "resource tools",
                if a.disable_resource_tools {
                    "hidden"
                } else {
                    "offered"
                }
                .into(),
            ),
            ("tool drift", tool_drift(a.tool_drift).into()),
            (
                "MCP tools",
                if a.tool_search {
                    "found by search_tools"
                } else {
                    "offered"
                }
                .into(),
            ),
            ("created", time(a.create_time.as_ref())),
        ] {
            rows.add_row(vec![field.to_owned(), value]);
        }
        ctx.out.line(rows)
    })
}

/// How `agents show` names an agent's `tool_drift`.
fn tool_drift(value: i32) -> &'static str {
    match runs::ToolDriftPolicy::try_from(value) {
        Ok(runs::ToolDriftPolicy::Refuse) => "refuse",
        Ok(runs::ToolDriftPolicy::Ask) => "ask",
        Ok(runs::ToolDriftPolicy::Accept) => "accept",
        Ok(runs::ToolDriftPolicy::Unspecified) => "refuse (the service's default)",
        Err(_) => "unknown",
    }
}
