//! What tool search says to the model: its two tools, what a search found,
//! and why a `call_tool` was not made.

use serde_json::{Value, json};

use crate::domain::model::ToolSpec;

/// `search_tools`, finding at most `max` tools a search.
pub fn search_tools_spec(name: &str, call_tool: &str, max: usize) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!(
            "Search the tools available to you by what they do. Returns the best matching tools with their names, descriptions and input schemas. Then call the one you need with {call_tool}. Search again with other words if none fits."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words (e.g. \"create a GitHub issue\")"},
                "limit": {"type": "integer", "minimum": 1, "maximum": max, "description": format!("How many tools to return (default 5, at most {max})")}
            },
            "required": ["query"]
        }),
    }
}

/// `call_tool`, which calls a tool `search_tools` found.
pub fn call_tool_spec(name: &str, search_tools: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!(
            "Call a tool that {search_tools} found, by its name, with arguments that match its input schema."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": format!("The tool's name, exactly as {search_tools} returned it")},
                "arguments": {"type": "object", "description": "The tool's arguments, matching its input schema"}
            },
            "required": ["name", "arguments"]
        }),
    }
}

/// What a search for `query` found: each tool's name, description and
/// input schema, best first.
pub fn tools_found(query: &str, found: &[&ToolSpec], call_tool: &str) -> String {
    let tools: Vec<Value> = found
        .iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "inputSchema": spec.parameters,
            })
        })
        .collect();
    let message = if tools.is_empty() {
        format!("No tool matched \"{query}\". Search again with other words.")
    } else {
        format!(
            "Found {} tools for \"{query}\". Call one with {call_tool}, giving its name and arguments.",
            tools.len()
        )
    };
    json!({ "tools": tools, "count": tools.len(), "message": message }).to_string()
}

/// A search without a query.
pub fn search_needs_query(search_tools: &str) -> String {
    format!("{search_tools} needs a query: what you want to do, in a few words.")
}

/// A `call_tool` that named no tool, or whose arguments were unreadable.
pub fn call_tool_unreadable(call_tool: &str, problem: &str) -> String {
    format!("{call_tool} needs a tool's name and its arguments as an object ({problem}).")
}

/// A `call_tool` naming a tool search does not find.
pub fn found_tool_not_found(name: &str, search_tools: &str) -> String {
    format!(
        "A tool with the name {name} was not found. Use {search_tools} to find a tool, then call it by the name it returns."
    )
}
