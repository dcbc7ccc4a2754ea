//! `search_tools` as a call: the query read, the run's tools searched,
//! and the tools found told to the model.

use serde_json::Value;

use super::{
    ToolArguments, ToolOutcome, Toolset,
    search::{CALL_TOOL, DEFAULT_RESULTS, MAX_QUERY_CHARS, MAX_RESULTS, SEARCH_TOOLS},
};
use crate::domain::texts;

/// Runs a `search_tools` call over `toolset`'s MCP tools.
pub(super) fn search(toolset: &Toolset, arguments: &ToolArguments) -> ToolOutcome {
    let Some(query) = arguments.text_arg("query") else {
        return ToolOutcome::failed(texts::search_needs_query(SEARCH_TOOLS));
    };
    let limit = arguments
        .to_value()
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_RESULTS, |n| {
            usize::try_from(n).unwrap_or(MAX_RESULTS)
        })
        .clamp(1, MAX_RESULTS);
    let found = toolset
        .search_index()
        .map(|index| index.search(query, limit))
        .unwrap_or_default();
    tracing::info!(found = found.len(), limit, "searched the run's tools");
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    ToolOutcome::succeeded(texts::tools_found(&query, &found, CALL_TOOL))
}
