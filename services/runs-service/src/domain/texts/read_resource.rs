//! What `mcp_read_resource` answers when it cannot read, and what
//! `mcp_list_resources` answers: JSON, as the resource tool bridge plan
//! returns them (§4.3). A failed read is `{"error": …}` with the plan's
//! sentences ("Resource URI or valid resourceName is required", "Failed to
//! read resource: …"), and `availableResources` when the model named
//! nothing readable (at most [`READ_LIST_CAP`]; the rest are counted in
//! `more`). The list is `{"resources": […], "count": N, "message": "Found N
//! available resources"}`.

use serde::Serialize;

use crate::domain::{
    ids::IntegrationId,
    ports::{Capabilities, McpResource},
};

/// Most resources and templates `mcp_read_resource` lists in one answer;
/// the rest are counted and left to `mcp_list_resources`.
pub const READ_LIST_CAP: usize = 20;

/// The call named neither a URI nor a resource name that exists (the
/// plan's own words).
pub const READ_INPUT_REQUIRED: &str = "Resource URI or valid resourceName is required";

/// One resource or resource template as the resource tools list it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_template: Option<&'a str>,
    description: &'a str,
    mime_type: &'a str,
    integration_id: IntegrationId,
}

/// Every resource, then every template, of `capabilities`, in order.
fn entries(capabilities: &[Capabilities]) -> impl Iterator<Item = Entry<'_>> {
    capabilities.iter().flat_map(|c| {
        let resources = c.resources.iter().map(move |r| entry(c, r, false));
        let templates = c.resource_templates.iter().map(move |t| entry(c, t, true));
        resources.chain(templates)
    })
}

/// Resource (or, with `template`, resource template) `r` of integration
/// `c`.
fn entry<'a>(c: &'a Capabilities, r: &'a McpResource, template: bool) -> Entry<'a> {
    Entry {
        name: &r.name,
        uri: (!template).then_some(r.uri.as_str()),
        uri_template: template.then_some(r.uri.as_str()),
        description: &r.description,
        mime_type: &r.mime_type,
        integration_id: c.integration_id,
    }
}

fn json(value: &impl Serialize) -> String {
    // Serializing strings, numbers and ids cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// `mcp_list_resources`' answer: every resource and template.
pub fn list_resources(capabilities: &[Capabilities]) -> String {
    #[derive(Serialize)]
    struct List<'a> {
        resources: Vec<Entry<'a>>,
        count: usize,
        message: String,
    }
    let resources: Vec<Entry<'_>> = entries(capabilities).collect();
    json(&List {
        count: resources.len(),
        message: format!("Found {} available resources", resources.len()),
        resources,
    })
}

/// The words of a read that failed: `Failed to read resource: {message}`.
pub fn failed_to_read(message: impl std::fmt::Display) -> String {
    format!("Failed to read resource: {message}")
}

/// `mcp_read_resource` could not read what it was asked for.
pub fn read_failed(message: impl std::fmt::Display) -> String {
    #[derive(Serialize)]
    struct Failed {
        error: String,
    }
    json(&Failed {
        error: failed_to_read(message),
    })
}

/// `error`, with what can be read: at most [`READ_LIST_CAP`] resources and
/// templates, and how many more there are.
pub fn with_available_resources(error: &str, capabilities: &[Capabilities]) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Failed<'a> {
        error: &'a str,
        available_resources: Vec<Entry<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        more: Option<String>,
    }
    let mut all = entries(capabilities);
    let available_resources: Vec<Entry<'_>> = all.by_ref().take(READ_LIST_CAP).collect();
    let more = all.count();
    json(&Failed {
        error,
        available_resources,
        more: (more > 0).then(|| format!("{more} more (use mcp_list_resources to see them all)")),
    })
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
