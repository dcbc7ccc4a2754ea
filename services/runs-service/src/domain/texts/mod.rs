//! Every text the model reads, in one place: failures, tool results, the
//! system prompt's sections and the built-in tools' descriptions. The wording
//! follows the original system's, which prompts and evaluations were written
//! against; each text is asserted by a test here.

mod approvals;
mod arguments;
mod content;
#[cfg(test)]
mod contract_tests;
mod data_sources;
#[cfg(test)]
mod failure_tests;
mod failures;
mod oversized;
#[cfg(test)]
mod oversized_tests;
mod pins;
mod read_resource;
mod results;
mod search;
mod specs;
mod system;
#[cfg(test)]
mod tests;

pub use approvals::{approval_denied, approval_unusable, may_have_run};
pub use arguments::{
    QUERY_REQUIRED, arguments_mismatch, integration_unavailable, no_resource_named, not_an_object,
    parameter_required, result_mismatch,
};
pub use content::{
    TOOL_EXECUTION_FAILED, into_rendered, redacted, render_content, rendered_len, tool_output,
};
pub use data_sources::{
    import_failed, query_out_of_memory, query_refusal, query_table, rendered_line_bytes,
};
pub use failures::tool_timed_out;
pub use oversized::{not_a_table, result_cut, result_table};
pub use pins::tool_withheld;
pub use read_resource::{
    READ_INPUT_REQUIRED, READ_LIST_CAP, failed_to_read, list_resources, no_resource_at,
    offered_by_several, read_failed, with_available_resources,
};
pub use results::{
    binary_resource, csv_imported, prompt_failed, prompt_rendered, query_failed,
    query_internal_error, query_refused, query_timed_out, resource_failed, text_resource,
};
pub use search::{
    call_tool_spec, call_tool_unreadable, found_tool_not_found, search_needs_query,
    search_tools_spec, tools_found,
};
pub use specs::{
    list_resources_spec, read_resource_spec, retrieve_prompt_spec, retrieve_resource_spec,
    source_query_spec,
};
pub use system::{integrations_unavailable, resource_guide};

use super::ports::McpCallError;

/// The model named a tool it was not offered.
pub fn tool_not_found(name: &str) -> String {
    format!(
        "A tool with the name {name} was not found. Only use tools that are available in your given list of tools."
    )
}

/// An MCP tool reported an error (its own, a timeout, an oversized result).
pub fn mcp_tool_failed(message: &str) -> String {
    format!("MCP tool execution failed: {message}")
}

/// The call to mcp-service itself failed.
pub fn mcp_call_failed(error: &McpCallError) -> String {
    match error {
        McpCallError::Timeout => {
            mcp_tool_failed("the tool did not answer in time and the call was cancelled")
        }
        McpCallError::AuthorizationRequired { url } => mcp_tool_failed(&format!(
            "the user has not connected their account to this integration. Ask them to connect it at {url} and then try again"
        )),
        other => format!(
            "MCP tool execution failed unexpectedly: {}",
            mcp_error(other)
        ),
    }
}

/// What the model reads of a failed call to mcp-service, inside the
/// sentence of the tool that made it: the server's failure worded from its
/// facts, anything else as mcp-service described it.
pub fn mcp_error(error: &McpCallError) -> String {
    match error {
        McpCallError::Server { facts, .. } => failures::server_failed(facts),
        other => other.to_string(),
    }
}

/// A call the thread records without a result: the run that made it ended
/// (its process stopped, or it was cancelled) while the call was under way.
pub const INTERRUPTED_CALL: &str = "MCP tool execution failed: the run was interrupted while this tool call was under way, so its result was lost. The call may or may not have taken effect; check before calling it again.";

/// The model's arguments are not a JSON object.
pub fn invalid_arguments(error: &str) -> String {
    mcp_tool_failed(&format!("the arguments are not a JSON object ({error})"))
}
