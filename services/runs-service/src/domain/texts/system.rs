//! The system prompt's sections that runs-service writes: how to reach the
//! integrations' resources and prompts, and which integrations are missing.

use std::fmt::Write as _;

use crate::domain::{
    ids::IntegrationId,
    ports::{Capabilities, McpPrompt, McpResource},
};

/// Most resources, templates and prompts listed in the system prompt.
const LIST_CAP: usize = 50;

/// The one-line note telling the model an integration is unavailable.
pub fn integrations_unavailable(failed: &[(IntegrationId, String)]) -> Option<String> {
    if failed.is_empty() {
        return None;
    }
    let list: Vec<String> = failed
        .iter()
        .map(|(id, error)| format!("{id} ({error})"))
        .collect();
    Some(format!(
        "Note: these MCP integrations could not be reached for this conversation and their tools are unavailable: {}.",
        list.join("; ")
    ))
}

/// The section listing resources, templates and prompts and how to reach
/// them; resources only when `with_resources`.
pub fn resource_guide(capabilities: &[Capabilities], with_resources: bool) -> Option<String> {
    let resources: Vec<_> = capabilities
        .iter()
        .flat_map(|c| c.resources.iter().map(move |r| (c, r)))
        .take(LIST_CAP)
        .collect();
    let templates: Vec<_> = capabilities
        .iter()
        .flat_map(|c| c.resource_templates.iter().map(move |r| (c, r)))
        .take(LIST_CAP)
        .collect();
    let prompts: Vec<_> = capabilities
        .iter()
        .flat_map(|c| c.prompts.iter().map(move |p| (c, p)))
        .take(LIST_CAP)
        .collect();
    let mut out = String::new();
    if with_resources && (!resources.is_empty() || !templates.is_empty()) {
        resource_section(&mut out, &resources, &templates);
    }
    if !prompts.is_empty() {
        prompt_section(&mut out, &prompts);
    }
    let out = out.trim().to_owned();
    (!out.is_empty()).then_some(out)
}

fn resource_section(
    out: &mut String,
    resources: &[(&Capabilities, &McpResource)],
    templates: &[(&Capabilities, &McpResource)],
) {
    out.push_str("Resource Access Guidelines:\n");
    out.push_str("1. Use the \"mcp_read_resource\" tool to fetch resource content.\n");
    out.push_str("2. Use the \"mcp_list_resources\" tool to see all available resources.\n");
    out.push_str("3. Provide either \"uri\" or \"resourceName\" parameter.\n");
    out.push_str("4. For a resource template, use the \"retrieve_mcp_resource\" tool with \"integrationId\", \"resourceUri\" and \"parameters\".\n");
    out.push_str(
        "5. CSV resources become data sources you can query with the \"source_query\" tool.\n",
    );
    if !resources.is_empty() {
        // The plan's layout (§4.4): two line breaks before the list, the
        // URI and type under each entry, a blank line after it; the
        // integration is added under them.
        out.push_str("\n\nAvailable resources:\n");
        for (i, (integration, r)) in resources.iter().enumerate() {
            let _ = write!(
                out,
                "{}. {} - {}\n   URI: {}\n",
                i + 1,
                r.name,
                r.description,
                r.uri
            );
            if !r.mime_type.is_empty() {
                let _ = writeln!(out, "   Type: {}", r.mime_type);
            }
            let _ = writeln!(out, "   Integration: {}\n", integration.integration_id);
        }
    }
    if !templates.is_empty() {
        out.push_str("\nResource templates (fill the {placeholders} with \"parameters\"):\n");
        for (i, (integration, t)) in templates.iter().enumerate() {
            let _ = write!(
                out,
                "{}. {} - {}\n   URI template: {}\n   Integration: {}\n",
                i + 1,
                t.name,
                t.description,
                t.uri,
                integration.integration_id
            );
        }
    }
}

fn prompt_section(out: &mut String, prompts: &[(&Capabilities, &McpPrompt)]) {
    out.push_str("\nAvailable prompts (use the \"retrieve_mcp_prompt\" tool):\n");
    for (i, (integration, p)) in prompts.iter().enumerate() {
        let arguments: Vec<String> = p
            .arguments
            .iter()
            .map(|a| {
                if a.required {
                    format!("{} (required)", a.name)
                } else {
                    a.name.clone()
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "{}. {} - {} (integration {}; arguments: {})",
            i + 1,
            p.name,
            p.description,
            integration.integration_id,
            if arguments.is_empty() {
                "none".to_owned()
            } else {
                arguments.join(", ")
            }
        );
    }
}
