//! `switchboard policies`: an organization's tool policies, written from a
//! file, read, versioned, deleted, and explained for a caller and a tool.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage};
use switchboard_proto::mcp::v1 as mcp;

use super::Context;
use crate::{
    error::{CliError, Service},
    output::{short, table, time},
    refs,
};

/// The policy commands.
#[derive(Debug, Subcommand)]
pub enum PoliciesCommand {
    /// Create a policy, or a new version of one, from a JSON or TOML file
    Put(PutArgs),
    /// Show a policy (its current version unless --version)
    Get {
        /// Its name.
        name: String,
        /// A version to show.
        #[arg(long, default_value_t = 0)]
        version: i64,
    },
    /// List the organization's policies
    List,
    /// List a policy's versions, newest first
    Versions {
        /// Its name.
        name: String,
    },
    /// Delete a policy (its versions stay readable)
    Delete {
        /// Its name.
        name: String,
        /// Delete only if this is the current version.
        #[arg(long, default_value_t = 0)]
        expected_version: i64,
    },
    /// Say which rule decides a call, and what every rule said
    Explain(ExplainArgs),
}

/// `policies put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// The policy file: the Policy message as JSON (`.json`) or TOML
    /// (`.toml`); effects may be written `deny`, `allow`, `require_approval`.
    file: PathBuf,
    /// The version this one replaces; 0 creates the policy.
    #[arg(long, default_value_t = 0)]
    expected_version: i64,
}

/// `policies explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The integration (id or slug).
    integration: String,
    /// A tool's own name.
    #[arg(long, group = "target")]
    tool: Option<String>,
    /// A resource URI.
    #[arg(long, group = "target")]
    resource: Option<String>,
    /// A prompt's name.
    #[arg(long, group = "target")]
    prompt: Option<String>,
    /// Explain for this user instead of yourself (admins only).
    #[arg(long)]
    user: Option<String>,
    /// Their roles (repeatable; with --user).
    #[arg(long = "role", requires = "user")]
    roles: Vec<String>,
    /// Their groups (repeatable; with --user).
    #[arg(long = "group", requires = "user")]
    groups: Vec<String>,
    /// Their teams (repeatable; with --user).
    #[arg(long = "team", requires = "user")]
    teams: Vec<String>,
    /// Their calling service (with --user).
    #[arg(long, requires = "user")]
    service: Option<String>,
}

/// Runs a policy command.
pub async fn run(ctx: &Context, command: PoliciesCommand) -> Result<(), CliError> {
    match command {
        PoliciesCommand::Put(args) => put(ctx, args).await,
        PoliciesCommand::Get { name, version } => {
            let policy = ctx
                .clients
                .policies()?
                .get_policy(ctx.clients.unary(mcp::GetPolicyRequest { name, version }))
                .await
                .map_err(CliError::from(Service::Mcp))?
                .into_inner()
                .policy
                .unwrap_or_default();
            print_policy(ctx, &policy)
        }
        PoliciesCommand::List => list(ctx, None).await,
        PoliciesCommand::Versions { name } => list(ctx, Some(name)).await,
        PoliciesCommand::Delete {
            name,
            expected_version,
        } => delete(ctx, name, expected_version).await,
        PoliciesCommand::Explain(args) => explain(ctx, args).await,
    }
}

async fn put(ctx: &Context, args: PutArgs) -> Result<(), CliError> {
    let policy = read_policy(&args.file)?;
    let written = ctx
        .clients
        .policies()?
        .put_policy(ctx.clients.unary(mcp::PutPolicyRequest {
            policy: Some(policy),
            expected_version: args.expected_version,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner()
        .policy
        .unwrap_or_default();
    ctx.out.either(&written, || {
        ctx.out.line(format!(
            "wrote policy {} version {}",
            written.name, written.version
        ))
    })
}

/// The organization's policies, or the versions of the one `name`d.
async fn list(ctx: &Context, name: Option<String>) -> Result<(), CliError> {
    let mut client = ctx.clients.policies()?;
    let failed = CliError::from(Service::Mcp);
    match name {
        None => {
            let response = client
                .list_policies(ctx.clients.unary(mcp::ListPoliciesRequest {}))
                .await
                .map_err(failed)?
                .into_inner();
            ctx.out
                .either(&response, || print_versions(ctx, &response.policies))
        }
        Some(name) => {
            let response = client
                .list_policy_versions(ctx.clients.unary(mcp::ListPolicyVersionsRequest {
                    name,
                    page_size: 500,
                    page_token: String::new(),
                }))
                .await
                .map_err(failed)?
                .into_inner();
            ctx.out
                .either(&response, || print_versions(ctx, &response.versions))
        }
    }
}

async fn delete(ctx: &Context, name: String, expected_version: i64) -> Result<(), CliError> {
    let response = ctx
        .clients
        .policies()?
        .delete_policy(ctx.clients.unary(mcp::DeletePolicyRequest {
            name: name.clone(),
            expected_version,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out
        .either(&response, || ctx.out.line(format!("deleted policy {name}")))
}

/// A policy file as the Policy message, in the protobuf JSON mapping (TOML
/// read as the same structure); short effect names are spelled out.
fn read_policy(path: &std::path::Path) -> Result<mcp::Policy, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let invalid = |e: String| CliError::Usage(format!("{}: {e}", path.display()));
    let mut value: serde_json::Value = if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).map_err(|e| invalid(e.to_string()))?
    } else {
        serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?
    };
    spell_effects(&mut value);
    let pool = DescriptorPool::decode(switchboard_proto::FILE_DESCRIPTOR_SET)
        .map_err(|e| CliError::Failed(format!("cannot read the contract: {e}")))?;
    let descriptor = pool
        .get_message_by_name("switchboard.mcp.v1.Policy")
        .ok_or_else(|| CliError::Failed("the contract has no Policy message".into()))?;
    let dynamic = DynamicMessage::deserialize_with_options(
        descriptor,
        value,
        &DeserializeOptions::new().deny_unknown_fields(true),
    )
    .map_err(|e| invalid(e.to_string()))?;
    mcp::Policy::decode(dynamic.encode_to_vec().as_slice()).map_err(|e| invalid(e.to_string()))
}

/// `deny` → `POLICY_EFFECT_DENY`, for `default_effect` and every rule's
/// `effect` (either spelling of the field's name).
fn spell_effects(value: &mut serde_json::Value) {
    fn spell(effect: &mut serde_json::Value) {
        if let Some(name) = effect.as_str()
            && !name.starts_with("POLICY_EFFECT_")
        {
            *effect = format!("POLICY_EFFECT_{}", name.to_uppercase().replace('-', "_")).into();
        }
    }
    for key in ["default_effect", "defaultEffect"] {
        if let Some(effect) = value.get_mut(key) {
            spell(effect);
        }
    }
    if let Some(rules) = value.get_mut("rules").and_then(|r| r.as_array_mut()) {
        for rule in rules {
            if let Some(effect) = rule.get_mut("effect") {
                spell(effect);
            }
        }
    }
}

fn effect_name(effect: i32) -> String {
    mcp::PolicyEffect::try_from(effect)
        .map(|e| {
            e.as_str_name()
                .trim_start_matches("POLICY_EFFECT_")
                .to_lowercase()
        })
        .unwrap_or_else(|_| effect.to_string())
}

fn print_policy(ctx: &Context, policy: &mcp::Policy) -> Result<(), CliError> {
    ctx.out.either(policy, || {
        ctx.out.line(format!(
            "{} version {} by {} at {} (default: {})",
            policy.name,
            policy.version,
            policy.updated_by,
            time(policy.update_time.as_ref()),
            effect_name(policy.default_effect)
        ))?;
        let mut rows = table(&["RULE", "EFFECT", "CONDITION", "REASON"]);
        for rule in &policy.rules {
            rows.add_row(vec![
                rule.name.clone(),
                effect_name(rule.effect),
                short(&rule.condition, 60),
                short(&rule.reason, 40),
            ]);
        }
        ctx.out.line(rows)
    })
}

fn print_versions(ctx: &Context, policies: &[mcp::Policy]) -> Result<(), CliError> {
    let mut rows = table(&["NAME", "VERSION", "RULES", "DEFAULT", "BY", "AT"]);
    for p in policies {
        rows.add_row(vec![
            p.name.clone(),
            p.version.to_string(),
            p.rules.len().to_string(),
            effect_name(p.default_effect),
            p.updated_by.clone(),
            time(p.update_time.as_ref()),
        ]);
    }
    ctx.out.line(rows)
}

async fn explain(ctx: &Context, args: ExplainArgs) -> Result<(), CliError> {
    use mcp::explain_policy_request::Target;
    let target = match (args.tool, args.resource, args.prompt) {
        (Some(tool), _, _) => Target::ToolName(tool),
        (_, Some(uri), _) => Target::ResourceUri(uri),
        (_, _, Some(prompt)) => Target::PromptName(prompt),
        _ => {
            return Err(CliError::Usage(
                "name a --tool, a --resource or a --prompt".into(),
            ));
        }
    };
    let subject = args.user.map(|user| mcp::PolicySubject {
        user,
        roles: args.roles,
        groups: args.groups,
        teams: args.teams,
        service: args.service.unwrap_or_default(),
    });
    let integration_id = refs::integration(&ctx.clients, &args.integration).await?;
    let response = ctx
        .clients
        .policies()?
        .explain_policy(ctx.clients.unary(mcp::ExplainPolicyRequest {
            subject,
            integration_id,
            target: Some(target),
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out.either(&response, || {
        let rule = |r: &mcp::PolicyRuleRef| format!("{}@{}/{}", r.policy, r.version, r.rule);
        let decided = response
            .deciding_rule
            .as_ref()
            .map_or_else(|| "no rule (the default)".to_owned(), rule);
        ctx.out
            .line(format!("{} by {decided}", effect_name(response.effect)))?;
        for matched in &response.matched_rules {
            ctx.out.line(format!(
                "  matched {} ({})",
                rule(matched),
                effect_name(matched.effect)
            ))?;
        }
        for error in &response.errors {
            let name = error.rule.as_ref().map(rule).unwrap_or_default();
            ctx.out
                .line(format!("  could not evaluate {name}: {}", error.message))?;
        }
        Ok(())
    })
}
