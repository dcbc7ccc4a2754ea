//! A YAML document read into a JSON value within bounds of its own: YAML
//! can say much more than it holds (an alias repeats its anchor wherever
//! it is named, and aliases of aliases multiply), so the reader counts what
//! it expands and how deep it goes, and stops at the first bound passed,
//! before the value is built.

use serde_json::Value;

/// Most levels of nesting.
const MAX_DEPTH: usize = 64;
/// Most nodes (mappings, sequences, scalars), aliases' replays included.
const MAX_NODES: usize = 1_000_000;
/// Most events replayed from aliases in one document.
const MAX_REPLAYED_EVENTS: usize = 100_000;

/// `text`'s one YAML document as a JSON value: its mapping keys strings, a
/// tag or a key repeated refused.
pub(super) fn read(text: &str) -> Result<Value, String> {
    let mut options = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_nodes = MAX_NODES;
    budget.max_documents = 1;
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
    serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| format!("is not YAML: {}", first_line(&e.to_string())))
}

/// An error's first line (the reader adds a snippet of the input below it).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
