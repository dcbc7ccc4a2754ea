//! What the model is told when the arguments of a built-in tool's call are
//! wrong: a parameter missing, an integration or a resource it names not
//! there, arguments that are not an object, arguments an MCP tool's input
//! schema refuses. Each is wrapped by its tool's failure text
//! (`resource_failed`, `prompt_failed`, `query_failed`, `invalid_arguments`,
//! `mcp_tool_failed`).

use serde_json::Value;

use super::mcp_tool_failed;
use crate::domain::problems::{Problem, ResultMismatch};

/// A required parameter of a resource or prompt call is missing or blank.
pub fn parameter_required(name: &str) -> String {
    format!("{name} parameter is required")
}

/// `source_query` was called without its query.
pub const QUERY_REQUIRED: &str = "the query parameter is required";

/// The call names an integration the run did not discover.
pub fn integration_unavailable(integration_id: &str) -> String {
    format!("the integration {integration_id} is not available in this conversation")
}

/// The call names a resource no integration offers.
pub fn no_resource_named(name: &str) -> String {
    format!("no resource is named {name}; use mcp_list_resources to see the available resources")
}

/// The arguments are JSON, but not an object.
pub fn not_an_object(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("got {kind}")
}

/// The arguments of an MCP tool's call do not match its input schema: each
/// problem at its field (the arguments as a whole when it has none), and
/// how many more were not told.
pub fn arguments_mismatch(problems: &[Problem], more: usize) -> String {
    mcp_tool_failed(&format!(
        "the arguments do not match the tool's input schema: {}",
        listed(problems, more)
    ))
}

/// The structured result of the MCP tool `tool` does not match the output
/// schema it declared.
pub fn result_mismatch(tool: &str, mismatch: &ResultMismatch) -> String {
    let why = match mismatch {
        ResultMismatch::Missing => "it returned no structured result".to_owned(),
        ResultMismatch::NotJson => "its structured result is not JSON".to_owned(),
        ResultMismatch::Problems(problems, more) => listed(problems, *more),
    };
    mcp_tool_failed(&format!(
        "the result of `{tool}` does not match the tool's output schema: {why}"
    ))
}

/// Each problem at its field (the value as a whole when it has none), and
/// how many more were not told.
fn listed(problems: &[Problem], more: usize) -> String {
    let told: Vec<String> = problems
        .iter()
        .map(|p| {
            if p.at.is_empty() {
                p.what.clone()
            } else {
                format!("`{}`: {}", p.at, p.what)
            }
        })
        .collect();
    let mut text = told.join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}
