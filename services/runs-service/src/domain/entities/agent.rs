//! Agents and their threads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::{
    ids::{AgentId, IntegrationId, ThreadId},
    pins::ToolDriftPolicy,
    recovery::RunRecovery,
};

/// Most fallback models of an agent.
pub const MAX_FALLBACK_MODELS: usize = 3;

/// A model: a provider of the service's configuration and its model id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    /// Provider name from the service configuration.
    pub provider: String,
    /// The provider's model id.
    pub model: String,
}

impl AgentConfig {
    /// The agent's model.
    pub fn model_choice(&self) -> ModelChoice {
        ModelChoice {
            provider: self.provider.clone(),
            model: self.model.clone(),
        }
    }
}

/// A tool the calling application executes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTool {
    /// Name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// An agent's settings (stored as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AgentConfig {
    /// System instructions.
    pub instructions: String,
    /// Provider name from the service configuration.
    pub provider: String,
    /// The provider's model id.
    pub model: String,
    /// Models tried in order when the one before fails before any output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_models: Vec<ModelChoice>,
    /// Integrations whose capabilities the agent uses, in order.
    pub mcp_integration_ids: Vec<IntegrationId>,
    /// Per-integration allow-lists of server tool names.
    #[serde(default, deserialize_with = "stored_tool_filters")]
    pub tool_filters: BTreeMap<IntegrationId, Vec<String>>,
    /// Tools executed by the caller.
    #[serde(default)]
    pub client_tools: Vec<ClientTool>,
    /// Model calls per run; 0 means the service default.
    #[serde(default)]
    pub max_steps: u32,
    /// Hide the synthetic resource tools.
    #[serde(default)]
    pub disable_resource_tools: bool,
    /// Offer `search_tools` and `call_tool` instead of the MCP tools.
    #[serde(default)]
    pub tool_search: bool,
    /// What a run does with a tool whose definition changed since the
    /// thread pinned it; agents stored before it have the service default.
    #[serde(default)]
    pub tool_drift: ToolDriftPolicy,
    /// What a run does when its replica stops; agents stored before it
    /// have the service default (interrupt).
    #[serde(default)]
    pub recovery: RunRecovery,
    /// Tools (as the model names them) made again when a continued run
    /// finds their call without a recorded result.
    #[serde(default)]
    pub idempotent_tools: Vec<String>,
    /// How the agent's MCP tools are shown to the model: renamed,
    /// described otherwise, or hidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_overrides: Vec<ToolOverride>,
}

/// How one MCP tool is shown to an agent's model; the server knows it by
/// its own name and definition whatever is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOverride {
    /// The tool's integration.
    pub integration_id: IntegrationId,
    /// The server's name of the tool.
    pub tool: String,
    /// The name the model calls it by, instead of `{slug}__{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The description the model reads, instead of the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Not offered to the model at all (nor callable).
    #[serde(default)]
    pub hidden: bool,
}

/// Reads stored allow-lists, leaving out those keyed by something that is
/// not a UUID: agents stored before filters were checked may hold one, and
/// it never applied (every integration id is a UUID), so the agent reads as
/// it behaved.
fn stored_tool_filters<'de, D>(
    deserializer: D,
) -> Result<BTreeMap<IntegrationId, Vec<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let stored = BTreeMap::<String, Vec<String>>::deserialize(deserializer)?;
    Ok(stored
        .into_iter()
        .filter_map(|(id, tools)| Some((id.parse().ok()?, tools)))
        .collect())
}

/// An agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// Id.
    pub id: AgentId,
    /// Owning organization.
    pub org_id: String,
    /// Name.
    pub name: String,
    /// Settings.
    pub config: AgentConfig,
    /// Created, Unix ms.
    pub created_at: i64,
    /// Updated, Unix ms.
    pub updated_at: i64,
}

/// A conversation of a user with an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    /// Id.
    pub id: ThreadId,
    /// Owning organization.
    pub org_id: String,
    /// Owning user.
    pub user_id: String,
    /// The agent.
    pub agent_id: AgentId,
    /// Title.
    pub title: String,
    /// Created, Unix ms.
    pub created_at: i64,
    /// Updated, Unix ms.
    pub updated_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_tool_filters_keyed_by_no_integration_id_are_left_out() {
        let stored = r#"{"instructions": "", "provider": "p", "model": "m",
            "mcp_integration_ids": ["0192F0C4-7A3B-7C3D-8E4F-0123456789AB"],
            "tool_filters": {"github": ["search"], "0192F0C4-7A3B-7C3D-8E4F-0123456789AB": ["push"]}}"#;
        let config: AgentConfig = serde_json::from_str(stored).expect("readable");
        let id: IntegrationId = "0192f0c4-7a3b-7c3d-8e4f-0123456789ab"
            .parse()
            .expect("a UUID");
        assert_eq!(config.mcp_integration_ids, [id]);
        assert_eq!(
            config.tool_filters,
            BTreeMap::from([(id, vec!["push".to_owned()])])
        );
        let written = serde_json::to_value(&config).expect("writable");
        assert_eq!(
            written["tool_filters"],
            serde_json::json!({"0192f0c4-7a3b-7c3d-8e4f-0123456789ab": ["push"]})
        );
        let junk = r#"{"instructions": "", "provider": "p", "model": "m", "mcp_integration_ids": ["github"]}"#;
        assert!(
            serde_json::from_str::<AgentConfig>(junk).is_err(),
            "an agent's integrations were always checked to be UUIDs"
        );
    }
}
