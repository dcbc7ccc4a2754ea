//! The thread's pinned tools against what its integrations list now: each
//! MCP tool offered for the first time is pinned, and one whose definition
//! changed since is reported and handled by the agent's `tool_drift`
//! (withheld; withheld with the change kept for the application to answer;
//! or pinned again and offered).

use std::collections::{BTreeSet, HashMap};

use switchboard_db::now_millis;

use crate::domain::{
    entities::ToolTarget,
    ids::ThreadId,
    pins::{MAX_CHANGES_WITH_TEXTS, ToolDefinitionChanged, ToolDriftPolicy, ToolPin},
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

/// The pins of the MCP tools of `toolset`, as offered now.
fn offered_pins(toolset: &Toolset) -> Vec<ToolPin> {
    let now = now_millis();
    // `specs` and `bindings` are in the same order; a tool is pinned as its
    // server describes it, whatever the agent shows the model.
    toolset
        .bindings
        .iter()
        .zip(toolset.specs.iter())
        .filter_map(|(binding, spec)| match &binding.target {
            ToolTarget::Mcp { integration_id, .. } => Some(ToolPin::new(
                &binding.name,
                *integration_id,
                toolset.server_description(&binding.name, &spec.description),
                &spec.parameters,
                now,
            )),
            _ => None,
        })
        .collect()
}

/// Pins the MCP tools of `toolset` the thread has not pinned, and applies
/// `policy` to those whose definition differs from their pin.
pub(super) async fn check_pins(
    repo: &dyn RunsRepository,
    thread_id: ThreadId,
    policy: ToolDriftPolicy,
    toolset: &Toolset,
) -> Result<Drift, RepositoryError> {
    let offered = offered_pins(toolset);
    if offered.is_empty() {
        return Ok(Drift::default());
    }
    let stored = repo.pin_tools(thread_id, &offered).await?;
    let stored: HashMap<&str, &ToolPin> = stored.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut drift = Drift::default();
    let mut accepted = Vec::new();
    let mut asked = Vec::new();
    for pin in &offered {
        let Some(change) = stored
            .get(pin.name.as_str())
            .and_then(|old| old.change_to(thread_id, pin, policy))
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
            if policy.applied() == ToolDriftPolicy::Ask {
                asked.push(pin.clone());
            }
        } else {
            accepted.push(pin.clone());
        }
        drift
            .changes
            .push(if drift.changes.len() < MAX_CHANGES_WITH_TEXTS {
                change
            } else {
                change.without_texts()
            });
    }
    if !accepted.is_empty() {
        repo.repin_tools(thread_id, &accepted).await?;
    }
    if !asked.is_empty() {
        repo.keep_tool_changes(thread_id, &asked).await?;
    }
    Ok(drift)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        domain::{
            entities::{Thread, ToolBinding},
            ids::{AgentId, IntegrationId},
            model::ToolSpec,
            pins::{ChangeAnswer, TEXT_LEFT_OUT},
        },
        fakes::MemoryRepository,
    };

    /// `count` MCP tools, each described as `description`.
    fn toolset(count: usize, description: &str) -> Toolset {
        let names: Vec<String> = (0..count).map(|i| format!("x__tool_{i:03}")).collect();
        Toolset {
            specs: names
                .iter()
                .map(|name| ToolSpec {
                    name: name.clone(),
                    description: description.into(),
                    parameters: json!({"type": "object"}),
                })
                .collect(),
            bindings: names
                .iter()
                .map(|name| ToolBinding {
                    name: name.clone(),
                    target: ToolTarget::Mcp {
                        integration_id: IntegrationId::fixed(1),
                        server_tool_name: name.clone(),
                    },
                })
                .collect(),
            ..Toolset::default()
        }
    }

    async fn repository() -> (MemoryRepository, ThreadId) {
        let repo = MemoryRepository::default();
        let thread = Thread {
            id: ThreadId::new(),
            org_id: "org".into(),
            user_id: "user".into(),
            agent_id: AgentId::new(),
            title: String::new(),
            created_at: 0,
            updated_at: 0,
        };
        repo.insert_thread(&thread).await.expect("stored");
        (repo, thread.id)
    }

    #[tokio::test]
    async fn changes_past_the_limit_are_reported_without_their_texts() {
        let (repo, thread) = repository().await;
        let count = MAX_CHANGES_WITH_TEXTS + 1;
        let first = check_pins(
            &repo,
            thread,
            ToolDriftPolicy::Refuse,
            &toolset(count, "Old."),
        )
        .await
        .expect("pinned");
        assert!(first.changes.is_empty() && first.withheld.is_empty());

        let drift = check_pins(
            &repo,
            thread,
            ToolDriftPolicy::Refuse,
            &toolset(count, "New."),
        )
        .await
        .expect("compared");
        assert_eq!(drift.withheld.len(), count);
        assert_eq!(drift.changes.len(), count);
        let last_in_full = &drift.changes[MAX_CHANGES_WITH_TEXTS - 1];
        assert_eq!(
            (
                last_in_full.old_description.as_str(),
                last_in_full.new_description.as_str()
            ),
            ("Old.", "New.")
        );
        let past = &drift.changes[MAX_CHANGES_WITH_TEXTS];
        assert!(past.description_changed);
        assert_eq!(past.new_description, TEXT_LEFT_OUT);
        assert_eq!(past.old_input_schema, TEXT_LEFT_OUT);
    }

    #[tokio::test]
    async fn an_accepted_change_is_pinned_and_not_reported_again() {
        let (repo, thread) = repository().await;
        check_pins(&repo, thread, ToolDriftPolicy::Accept, &toolset(2, "Old."))
            .await
            .expect("pinned");
        let accepted = check_pins(&repo, thread, ToolDriftPolicy::Accept, &toolset(2, "New."))
            .await
            .expect("compared");
        assert_eq!(accepted.changes.len(), 2);
        assert!(accepted.withheld.is_empty());
        let again = check_pins(&repo, thread, ToolDriftPolicy::Refuse, &toolset(2, "New."))
            .await
            .expect("compared");
        assert!(again.changes.is_empty() && again.withheld.is_empty());
    }

    #[tokio::test]
    async fn an_asked_change_is_withheld_until_its_digest_is_accepted() {
        let (repo, thread) = repository().await;
        check_pins(&repo, thread, ToolDriftPolicy::Ask, &toolset(1, "Old."))
            .await
            .expect("pinned");
        let asked = check_pins(&repo, thread, ToolDriftPolicy::Ask, &toolset(1, "New."))
            .await
            .expect("compared");
        assert_eq!(asked.withheld.len(), 1);
        let change = &asked.changes[0];
        assert_eq!(change.applied, ToolDriftPolicy::Ask);
        assert_eq!(change.thread_id, Some(thread));
        let Some(new_digest) = asked.changes.first().map(|c| c.new_digest.clone()) else {
            panic!("a change");
        };
        assert!(matches!(
            repo.accept_tool_change(thread, &change.name, &new_digest)
                .await
                .expect("answered"),
            ChangeAnswer::Pinned(_)
        ));
        let after = check_pins(&repo, thread, ToolDriftPolicy::Ask, &toolset(1, "New."))
            .await
            .expect("compared");
        assert!(after.changes.is_empty() && after.withheld.is_empty());
    }

    #[tokio::test]
    async fn a_refused_change_is_not_kept_for_an_answer() {
        let (repo, thread) = repository().await;
        check_pins(&repo, thread, ToolDriftPolicy::Refuse, &toolset(1, "Old."))
            .await
            .expect("pinned");
        let refused = check_pins(&repo, thread, ToolDriftPolicy::Refuse, &toolset(1, "New."))
            .await
            .expect("compared");
        let change = &refused.changes[0];
        assert_eq!(
            repo.accept_tool_change(thread, &change.name, &change.new_digest)
                .await
                .expect("answered"),
            ChangeAnswer::NoneWaiting
        );
    }
}
