//! The thread's pinned tools against what its integrations list now: each
//! MCP tool offered for the first time is pinned, and one whose definition
//! changed since is reported and handled by the agent's `tool_drift`
//! (withheld, or pinned again and offered).

use std::collections::{BTreeSet, HashMap};

use switchboard_db::now_millis;

use crate::domain::{
    entities::ToolTarget,
    ids::ThreadId,
    pins::{ToolDefinitionChanged, ToolDriftPolicy, ToolPin},
    ports::{RepositoryError, RunsRepository},
    tools::Toolset,
};

/// What the pins made of a run's tools.
#[derive(Debug, Default)]
pub(super) struct Drift {
    /// The names the model is not offered.
    pub(super) withheld: BTreeSet<String>,
    /// Each changed tool, for its event.
    pub(super) changes: Vec<ToolDefinitionChanged>,
}

/// Pins the MCP tools of `toolset` the thread has not pinned, and applies
/// `policy` to those whose definition differs from their pin.
pub(super) async fn check_pins(
    repo: &dyn RunsRepository,
    thread_id: ThreadId,
    policy: ToolDriftPolicy,
    toolset: &Toolset,
) -> Result<Drift, RepositoryError> {
    let now = now_millis();
    // `specs` and `bindings` are in the same order.
    let offered: Vec<ToolPin> = toolset
        .bindings
        .iter()
        .zip(toolset.specs.iter())
        .filter_map(|(binding, spec)| match &binding.target {
            ToolTarget::Mcp { integration_id, .. } => Some(ToolPin::new(
                &binding.name,
                *integration_id,
                &spec.description,
                &spec.parameters,
                now,
            )),
            _ => None,
        })
        .collect();
    if offered.is_empty() {
        return Ok(Drift::default());
    }
    let stored = repo.pin_tools(thread_id, &offered).await?;
    let stored: HashMap<&str, &ToolPin> = stored.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut drift = Drift::default();
    let mut accepted = Vec::new();
    for pin in &offered {
        let Some(change) = stored
            .get(pin.name.as_str())
            .and_then(|old| old.change_to(pin, policy))
        else {
            continue;
        };
        tracing::warn!(
            tool = %pin.name,
            integration_id = %pin.integration_id,
            description_changed = change.description_changed,
            input_schema_changed = change.input_schema_changed,
            applied = ?change.applied,
            "a pinned tool's definition changed"
        );
        if policy.withholds() {
            drift.withheld.insert(pin.name.clone());
        } else {
            accepted.push(pin.clone());
        }
        drift.changes.push(change);
    }
    if !accepted.is_empty() {
        repo.repin_tools(thread_id, &accepted).await?;
    }
    Ok(drift)
}
