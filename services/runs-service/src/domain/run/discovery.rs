//! What a run's integrations offer, found once per run and concurrently, and
//! the system prompt built from it.

use super::Orchestrator;
use crate::domain::{
    entities::Agent,
    ports::{Caller, Capabilities},
    texts,
};

impl Orchestrator {
    /// Discovers every integration of the agent at once, each with its own
    /// deadline; failures are logged, reported and skipped.
    pub(super) async fn discover(
        &self,
        caller: &Caller,
        agent: &Agent,
    ) -> (Vec<Capabilities>, Vec<(String, String)>) {
        let ids = &agent.config.mcp_integration_ids;
        if ids.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let timeout = self.settings.discovery_timeout;
        let mcp = &*self.ports.mcp;
        let outcomes = futures::future::join_all(ids.iter().map(|id| async move {
            let outcome =
                match tokio::time::timeout(timeout, mcp.discover(caller, id, timeout)).await {
                    Ok(outcome) => outcome.map_err(|e| e.to_string()),
                    Err(_) => Err(format!(
                        "discovery timed out after {}s",
                        timeout.as_secs_f64()
                    )),
                };
            (id.clone(), outcome)
        }))
        .await;
        let mut capabilities = Vec::new();
        let mut failed = Vec::new();
        for (id, outcome) in outcomes {
            match outcome {
                Ok(found) => {
                    tracing::info!(
                        integration_id = %id,
                        tools = found.tools.len(),
                        resources = found.resources.len(),
                        prompts = found.prompts.len(),
                        "integration discovered"
                    );
                    capabilities.push(found);
                }
                Err(error) => {
                    tracing::warn!(integration_id = %id, error = %error, "integration discovery failed; skipping it");
                    failed.push((id, error));
                }
            }
        }
        (capabilities, failed)
    }

    /// The agent's instructions, the guide to its integrations' resources and
    /// prompts, and a note naming the integrations that failed.
    pub(super) fn system_prompt(
        agent: &Agent,
        capabilities: &[Capabilities],
        failed: &[(String, String)],
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
}
