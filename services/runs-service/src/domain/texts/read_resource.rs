//! What `mcp_read_resource` answers when it cannot read: the plan's
//! sentences ("Resource URI or valid resourceName is required", "Failed to
//! read resource: …"), each followed by a bounded list of what can be read
//! when the model named nothing readable.

use std::fmt::Write as _;

use super::results::resource_line;
use crate::domain::{ids::IntegrationId, ports::Capabilities};

/// Most resources and templates `mcp_read_resource` lists in one answer;
/// the rest are counted ("and K more") and left to `mcp_list_resources`.
pub const READ_LIST_CAP: usize = 20;

/// The call named neither a URI nor a resource name that exists (the
/// plan's own words).
pub const READ_INPUT_REQUIRED: &str = "Resource URI or valid resourceName is required";

/// `mcp_read_resource` could not read what it was asked for.
pub fn read_failed(message: impl std::fmt::Display) -> String {
    format!("Failed to read resource: {message}")
}

/// No integration of the run lists `uri` (as a resource, a template, or a
/// URI a template produces).
pub fn no_resource_at(uri: &str) -> String {
    format!("no integration of this conversation lists the resource {uri}")
}

/// Several integrations list what the call names: the model picks one
/// with `retrieve_mcp_resource`.
pub fn offered_by_several(what: &str, integrations: &[IntegrationId]) -> String {
    let ids: Vec<String> = integrations.iter().map(ToString::to_string).collect();
    format!(
        "{what} is offered by several integrations ({}); call retrieve_mcp_resource with the integrationId of the one you mean and the resourceUri",
        ids.join(", ")
    )
}

/// `message`, then what can be read: at most [`READ_LIST_CAP`] resources
/// and templates, and how many more there are.
pub fn with_available_resources(message: &str, capabilities: &[Capabilities]) -> String {
    let mut entries = capabilities.iter().flat_map(|c| {
        let resources = c.resources.iter().map(move |r| resource_line(c, r, false));
        let templates = c
            .resource_templates
            .iter()
            .map(move |t| resource_line(c, t, true));
        resources.chain(templates)
    });
    let listed: Vec<String> = entries.by_ref().take(READ_LIST_CAP).collect();
    if listed.is_empty() {
        return format!("{message}\nNo MCP resources are available.");
    }
    let mut out = format!("{message}\nAvailable resources:\n");
    for line in &listed {
        out.push_str(line);
    }
    let more = entries.count();
    if more > 0 {
        let _ = write!(
            out,
            "and {more} more (use mcp_list_resources to see them all)"
        );
    }
    out.trim_end().to_owned()
}
