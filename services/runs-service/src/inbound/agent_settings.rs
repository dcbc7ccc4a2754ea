//! An agent message's settings as the domain's, with the integration ids in
//! them parsed: each invalid one is named by its field.

use std::collections::BTreeMap;

use switchboard_proto::{json::struct_to_json, runs::v1 as pb};
use switchboard_server::FieldViolation;

use crate::domain::{
    entities::{AgentConfig, ClientTool, ModelChoice, ToolOverride},
    error::RunsError,
    ids::{IntegrationId, ParsedId},
    pins::ToolDriftPolicy,
    recovery::{RunRecovery, check_idempotent_tools},
    tools::check_tool_overrides,
};

/// An agent message's settings and what of them is not valid.
#[derive(Debug)]
pub(crate) struct AgentSettings {
    config: AgentConfig,
    /// Each invalid field, with the update-mask path it belongs to, so that
    /// an update is refused only for the fields it changes.
    invalid: Vec<(&'static str, FieldViolation)>,
}

impl AgentSettings {
    /// Reads the settings of `agent`, the message of request field `agent`.
    pub(crate) fn parse(agent: &pb::Agent) -> Self {
        let mut invalid = Vec::new();
        let mcp_integration_ids = agent
            .mcp_integration_ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let field = format!("agent.mcp_integration_ids[{i}]");
                IntegrationId::parse(&field, id)
                    .map_err(|v| invalid.push(("mcp_integration_ids", v)))
                    .ok()
            })
            .collect();
        let tool_filters = agent
            .tool_filters
            .iter()
            .enumerate()
            .filter_map(|(i, filter)| {
                let field = format!("agent.tool_filters[{i}].integration_id");
                IntegrationId::parse(&field, &filter.integration_id)
                    .map(|id| (id, filter.allowed_tools.clone()))
                    .map_err(|v| invalid.push(("tool_filters", v)))
                    .ok()
            })
            .collect::<BTreeMap<_, _>>();
        let tool_drift = tool_drift(agent.tool_drift)
            .map_err(|v| invalid.push(("tool_drift", v)))
            .unwrap_or_default();
        let recovery = recovery(agent.recovery)
            .map_err(|v| invalid.push(("recovery", v)))
            .unwrap_or_default();
        if let Some(problem) = check_idempotent_tools(&agent.idempotent_tools) {
            invalid.push((
                "idempotent_tools",
                FieldViolation::new("agent.idempotent_tools", problem),
            ));
        }
        let tool_overrides = tool_overrides(agent, &mut invalid);
        let model = agent.model.clone().unwrap_or_default();
        let config = AgentConfig {
            instructions: agent.instructions.clone(),
            provider: model.provider,
            model: model.model,
            mcp_integration_ids,
            tool_filters,
            client_tools: agent.client_tools.iter().map(client_tool).collect(),
            max_steps: u32::try_from(agent.max_steps).unwrap_or(0),
            disable_resource_tools: agent.disable_resource_tools,
            tool_drift,
            recovery,
            idempotent_tools: agent.idempotent_tools.clone(),
            fallback_models: fallback_models(agent),
            tool_overrides,
            tool_search: agent.tool_search,
        };
        Self { config, invalid }
    }

    /// The settings of a new agent: every field must be valid.
    pub(crate) fn all(self) -> Result<AgentConfig, RunsError> {
        self.valid(|_| true)
    }

    /// The settings of an update that changes the fields `paths` names:
    /// those must be valid, the others are not read.
    pub(crate) fn masked(self, paths: &[String]) -> Result<AgentConfig, RunsError> {
        self.valid(|path| paths.iter().any(|p| p == path))
    }

    fn valid(self, read: impl Fn(&str) -> bool) -> Result<AgentConfig, RunsError> {
        let violations: Vec<FieldViolation> = self
            .invalid
            .into_iter()
            .filter(|(path, _)| read(path))
            .map(|(_, violation)| violation)
            .collect();
        if violations.is_empty() {
            Ok(self.config)
        } else {
            Err(RunsError::Invalid(violations))
        }
    }
}

fn client_tool(tool: &pb::ClientTool) -> ClientTool {
    ClientTool {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: tool.parameters_schema.as_ref().map_or_else(
            || serde_json::json!({"type": "object", "properties": {}}),
            struct_to_json,
        ),
    }
}

/// The agent's `tool_drift`; a number the enum does not name is invalid.
fn tool_drift(value: i32) -> Result<ToolDriftPolicy, FieldViolation> {
    match pb::ToolDriftPolicy::try_from(value) {
        Ok(pb::ToolDriftPolicy::Unspecified) => Ok(ToolDriftPolicy::Unspecified),
        Ok(pb::ToolDriftPolicy::Refuse) => Ok(ToolDriftPolicy::Refuse),
        Ok(pb::ToolDriftPolicy::Ask) => Ok(ToolDriftPolicy::Ask),
        Ok(pb::ToolDriftPolicy::Accept) => Ok(ToolDriftPolicy::Accept),
        Err(_) => Err(FieldViolation::new(
            "agent.tool_drift",
            format!("{value} is not a ToolDriftPolicy"),
        )),
    }
}

/// The agent's `recovery`; a number the enum does not name is invalid.
fn recovery(value: i32) -> Result<RunRecovery, FieldViolation> {
    match pb::RunRecovery::try_from(value) {
        Ok(pb::RunRecovery::Unspecified) => Ok(RunRecovery::Unspecified),
        Ok(pb::RunRecovery::Interrupt) => Ok(RunRecovery::Interrupt),
        Ok(pb::RunRecovery::Continue) => Ok(RunRecovery::Continue),
        Err(_) => Err(FieldViolation::new(
            "agent.recovery",
            format!("{value} is not a RunRecovery"),
        )),
    }
}

/// The overrides of `agent`, each with its integration id parsed; what is
/// wrong with them pushed to `invalid`.
fn tool_overrides(
    agent: &pb::Agent,
    invalid: &mut Vec<(&'static str, FieldViolation)>,
) -> Vec<ToolOverride> {
    let some = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    // Each with its index in the request, for the fields named.
    let (at, overrides): (Vec<usize>, Vec<ToolOverride>) = agent
        .tool_overrides
        .iter()
        .enumerate()
        .filter_map(|(i, over)| {
            let field = format!("agent.tool_overrides[{i}].integration_id");
            let integration_id = IntegrationId::parse(&field, &over.integration_id)
                .map_err(|v| invalid.push(("tool_overrides", v)))
                .ok()?;
            Some((
                i,
                ToolOverride {
                    integration_id,
                    tool: over.tool.clone(),
                    name: some(&over.name),
                    description: some(&over.description),
                    hidden: over.hidden,
                },
            ))
        })
        .unzip();
    for (index, problem) in check_tool_overrides(&overrides) {
        let (part, words) = problem.split_once(": ").unwrap_or(("", problem.as_str()));
        let field = match index.and_then(|i| at.get(i)) {
            Some(i) => format!("agent.tool_overrides[{i}].{part}"),
            None => "agent.tool_overrides".to_owned(),
        };
        invalid.push(("tool_overrides", FieldViolation::new(field, words)));
    }
    overrides
}

fn fallback_models(agent: &pb::Agent) -> Vec<ModelChoice> {
    agent
        .fallback_models
        .iter()
        .map(|m| ModelChoice {
            provider: m.provider.clone(),
            model: m.model.clone(),
        })
        .collect()
}
