//! What the model is told when the arguments of a built-in tool's call are
//! wrong: a parameter missing, an integration or a resource it names not
//! there, arguments that are not an object. Each is wrapped by its tool's
//! failure text (`resource_failed`, `prompt_failed`, `query_failed`,
//! `invalid_arguments`).

use serde_json::Value;

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
