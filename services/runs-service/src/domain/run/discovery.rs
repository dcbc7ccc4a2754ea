//! What a run's integrations offer, found once per run and concurrently, and
//! the system prompt built from it.

use std::{sync::Arc, time::Duration};

use crate::domain::{
    entities::Agent,
    ids::IntegrationId,
    ports::{Caller, Capabilities, McpCallError, McpPort},
    texts,
};

/// Discovers what a run's integrations offer: mcp-service, and the time
/// each integration's discovery may take.
#[derive(Clone)]
pub(super) struct Discovery {
    pub(super) mcp: Arc<dyn McpPort>,
    pub(super) timeout: Duration,
}

/// What a run's integrations offer, and which could not be discovered.
#[derive(Debug, Default)]
pub(super) struct Discovered {
    /// What each discovered integration offers.
    pub(super) capabilities: Vec<Capabilities>,
    /// The integrations skipped, and why.
    pub(super) failed: Vec<(IntegrationId, String)>,
    /// Of those, the ones the user must connect, with the URL to do it.
    pub(super) authorize: Vec<(IntegrationId, String)>,
}

impl Discovery {
    /// Discovers every integration of the agent at once, each with its own
    /// deadline; failures are logged, reported and skipped.
    pub(super) async fn discover(&self, caller: &Caller, agent: &Agent) -> Discovered {
        let ids = &agent.config.mcp_integration_ids;
        if ids.is_empty() {
            return Discovered::default();
        }
        let timeout = self.timeout;
        let mcp = &*self.mcp;
        tracing::info!(
            integration_count = ids.len(),
            integration_ids = %joined(ids),
            "discovering MCP capabilities"
        );
        let outcomes = futures::future::join_all(ids.iter().map(|&id| async move {
            let allowed = agent.config.tool_filters.get(&id).map(Vec::as_slice);
            let discover = mcp.discover(caller, id, allowed, timeout);
            let outcome = match tokio::time::timeout(timeout, discover).await {
                Ok(outcome) => outcome.map_err(|error| (error.kind(), error)),
                Err(_) => Err((
                    "timeout",
                    McpCallError::Failed(format!(
                        "discovery timed out after {}s",
                        timeout.as_secs_f64()
                    )),
                )),
            };
            (id, outcome)
        }))
        .await;
        let mut found = Discovered::default();
        for (id, outcome) in outcomes {
            match outcome {
                Ok(offered) => {
                    tracing::info!(
                        integration_id = %id,
                        tools = offered.tools.len(),
                        resources = offered.resources.len(),
                        resource_templates = offered.resource_templates.len(),
                        prompts = offered.prompts.len(),
                        "integration discovered"
                    );
                    found.capabilities.push(offered);
                }
                Err((error_type, error)) => {
                    tracing::warn!(integration_id = %id, error_type, error = %error, "integration discovery failed; skipping it");
                    if let McpCallError::AuthorizationRequired { url } = &error {
                        found.authorize.push((id, url.clone()));
                    }
                    found.failed.push((id, error.to_string()));
                }
            }
        }
        found.log_totals();
        found
    }
}

impl Discovered {
    /// The final tally, as one line: what the run can use, and how many
    /// integrations it goes without.
    fn log_totals(&self) {
        let total =
            |count: fn(&Capabilities) -> usize| self.capabilities.iter().map(count).sum::<usize>();
        tracing::info!(
            discovered = self.capabilities.len(),
            failed = self.failed.len(),
            total_tools = total(|c| c.tools.len()),
            total_resources = total(|c| c.resources.len()),
            total_resource_templates = total(|c| c.resource_templates.len()),
            total_prompts = total(|c| c.prompts.len()),
            "MCP discovery complete"
        );
    }
}

fn joined(ids: &[IntegrationId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The agent's instructions, the guide to its integrations' resources and
/// prompts, and a note naming the integrations that failed.
pub(super) fn system_prompt(
    agent: &Agent,
    capabilities: &[Capabilities],
    failed: &[(IntegrationId, String)],
) -> Option<String> {
    let mut sections = Vec::new();
    if !agent.config.instructions.trim().is_empty() {
        sections.push(agent.config.instructions.clone());
    }
    if !agent.config.mcp_integration_ids.is_empty()
        && let Some(guide) =
            texts::resource_guide(capabilities, !agent.config.disable_resource_tools)
    {
        sections.push(guide);
    }
    if let Some(note) = texts::integrations_unavailable(failed) {
        sections.push(note);
    }
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}
