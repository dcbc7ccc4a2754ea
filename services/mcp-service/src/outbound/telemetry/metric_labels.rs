//! Which names may be metric labels and span names: the tools and prompts a
//! server listed in its integration's discovery on this replica. Any other
//! name a caller sends (a tool no server listed, up to the size of a whole
//! message) is `_other`, so a caller cannot add series or grow what a
//! scrape returns.
//!
//! What is kept is bounded: names longer than the MCP specification's 128
//! characters are not kept, and no more names in all than an instrument
//! keeps series (`SWITCHBOARD_METRICS_MAX_SERIES`), since more could only
//! land in the overflow series.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, OnceLock},
};

use switchboard_telemetry::OTHER;

use crate::domain::{integration::IntegrationId, ports::Discovery};

/// Longest name kept as a label, in bytes: the MCP specification's bound on
/// tool names.
pub const MAX_LABEL_BYTES: usize = 128;

/// The listed names of one kind (tools or prompts), per integration.
#[derive(Debug, Default)]
struct Listed {
    by_integration: HashMap<IntegrationId, HashSet<Arc<str>>>,
    total: usize,
}

impl Listed {
    fn replace<'a>(
        &mut self,
        integration: IntegrationId,
        names: impl Iterator<Item = &'a str>,
        room: usize,
    ) {
        self.forget(integration);
        let room = room.saturating_sub(self.total);
        let kept: HashSet<Arc<str>> = names
            .filter(|name| !name.is_empty() && name.len() <= MAX_LABEL_BYTES)
            .take(room)
            .map(Arc::from)
            .collect();
        if !kept.is_empty() {
            self.total += kept.len();
            self.by_integration.insert(integration, kept);
        }
    }

    fn forget(&mut self, integration: IntegrationId) {
        if let Some(old) = self.by_integration.remove(&integration) {
            self.total -= old.len();
        }
    }

    fn label(&self, integration: IntegrationId, name: &str) -> Option<Arc<str>> {
        self.by_integration.get(&integration)?.get(name).cloned()
    }
}

#[derive(Debug, Default)]
struct Labels {
    tools: Listed,
    prompts: Listed,
}

fn labels() -> &'static Mutex<Labels> {
    static LABELS: OnceLock<Mutex<Labels>> = OnceLock::new();
    LABELS.get_or_init(Mutex::default)
}

/// Keeps the tools and prompts `discovery` lists as the labels of
/// `integration`, in place of those of its previous discovery.
pub fn remember(integration: IntegrationId, discovery: &Discovery) {
    let room = switchboard_telemetry::max_series();
    if let Ok(mut labels) = labels().lock() {
        labels
            .tools
            .replace(integration, discovery.tools.iter().map(|t| &*t.name), room);
        labels.prompts.replace(
            integration,
            discovery.prompts.iter().map(|p| &*p.name),
            room,
        );
    }
}

/// Drops the labels of `integration` (it changed or is gone).
pub fn forget(integration: IntegrationId) {
    if let Ok(mut labels) = labels().lock() {
        labels.tools.forget(integration);
        labels.prompts.forget(integration);
    }
}

/// The label of tool `name` of `integration`: its name if the server listed
/// it, `_other` otherwise.
pub fn tool(integration: IntegrationId, name: &str) -> Arc<str> {
    labels()
        .lock()
        .ok()
        .and_then(|labels| labels.tools.label(integration, name))
        .unwrap_or_else(|| OTHER.into())
}

/// The label of prompt `name` of `integration`: its name if the server
/// listed it, `_other` otherwise.
pub fn prompt(integration: IntegrationId, name: &str) -> Arc<str> {
    labels()
        .lock()
        .ok()
        .and_then(|labels| labels.prompts.label(integration, name))
        .unwrap_or_else(|| OTHER.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn integration() -> IntegrationId {
        IntegrationId::new()
    }

    #[test]
    fn only_listed_names_of_the_integration_are_labels() {
        let mut listed = Listed::default();
        let (a, b) = (integration(), integration());
        listed.replace(a, ["echo", "add"].into_iter(), 100);
        assert_eq!(listed.label(a, "echo").as_deref(), Some("echo"));
        assert_eq!(listed.label(a, "nope"), None);
        assert_eq!(listed.label(b, "echo"), None, "another integration's name");
        listed.replace(a, ["add"].into_iter(), 100);
        assert_eq!(
            listed.label(a, "echo"),
            None,
            "the new listing replaces the old"
        );
        assert_eq!(listed.total, 1);
        listed.forget(a);
        assert_eq!(listed.total, 0);
        assert!(listed.by_integration.is_empty());
    }

    #[test]
    fn long_names_and_names_past_the_room_are_not_kept() {
        let mut listed = Listed::default();
        let (a, b) = (integration(), integration());
        let long = "x".repeat(MAX_LABEL_BYTES + 1);
        let exact = "y".repeat(MAX_LABEL_BYTES);
        listed.replace(a, [long.as_str(), exact.as_str(), ""].into_iter(), 3);
        assert_eq!(listed.label(a, &long), None);
        assert!(listed.label(a, &exact).is_some());
        assert_eq!(listed.total, 1);
        let many: Vec<String> = (0..10).map(|i| format!("tool-{i}")).collect();
        listed.replace(b, many.iter().map(String::as_str), 3);
        assert_eq!(listed.total, 3, "the room is shared by every integration");
        assert_eq!(listed.by_integration[&b].len(), 2);
    }
}
