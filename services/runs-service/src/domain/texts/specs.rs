//! The built-in tools as the model is offered them.

use serde_json::json;

use crate::domain::{datasource::DataSource, model::ToolSpec};

/// `retrieve_mcp_resource`, with ticket 030's schema: `integrationId` and
/// `resourceUri` required, `parameters` optional.
///
/// Why `required` holds both although a resource can also be read by name:
/// a schema cannot say "these two, or that one" in a form every provider
/// takes (Anthropic refuses `anyOf`/`oneOf` at the top of a tool's schema,
/// OpenAI's strict mode too), and a `required` list that is empty tells the
/// model nothing. So each tool's schema says one thing: this one the
/// reference's integration-and-URI form, `mcp_read_resource` the name (or
/// URI alone) form. What the router accepts stays wider than what the
/// schema asks: a `resourceName` alone, or a `resourceUri` that exactly one
/// of the run's integrations lists, is still read (the system prompt's
/// guide offers the name form, and threads written before keep working);
/// anything else is answered with the ticket's sentence naming the missing
/// parameter.
pub fn retrieve_resource_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "Retrieve a resource from an MCP integration. CSV resources are automatically imported as data sources that can be queried with the source_query tool. Text resources return their content directly. Use this when you need to access datasets, files, or configuration from MCP servers.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "integrationId": {"type": "string", "description": "The ID of the MCP integration to retrieve the resource from"},
                "resourceUri": {"type": "string", "description": "The URI of the resource to retrieve (e.g., \"dataset://sales\" or \"file://config.json\")"},
                "parameters": {"type": "object", "description": "Optional parameters for parameterized resource URIs (e.g., {category: \"electronics\"})", "additionalProperties": true}
            },
            "required": ["integrationId", "resourceUri"]
        }),
    }
}

/// `mcp_read_resource`, as the resource tool bridge plan defines it (its
/// tool definition, not the variant that lists every resource name in the
/// description: names come from MCP servers, unbounded, and a description
/// that changes with them defeats the providers' prompt caching; the
/// system prompt and `mcp_list_resources` list them, bounded).
pub fn read_resource_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "Read content from an MCP resource. Use this tool to fetch data from available resources.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "uri": {"type": "string", "description": "The resource URI to read (e.g., \"resource://people\", \"resource://todos/1\")"},
                "resourceName": {"type": "string", "description": "Alternative: resource name from the available resources list"}
            },
            "required": []
        }),
    }
}

/// `mcp_list_resources`, as the plan defines it (§3.2, its words verbatim;
/// the result also names each entry's integration, MIME type, and
/// `uriTemplate` for a template).
pub fn list_resources_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "List all available MCP resources with their URIs and descriptions.".into(),
        parameters: json!({"type": "object", "properties": {}, "required": []}),
    }
}

/// `retrieve_mcp_prompt`.
pub fn retrieve_prompt_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description:
            "Retrieve a prompt from an MCP integration, rendered with the given arguments.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "integrationId": {"type": "string", "description": "The ID of the MCP integration that offers the prompt"},
                "promptName": {"type": "string", "description": "The name of the prompt"},
                "arguments": {"type": "object", "description": "The prompt's arguments, by name", "additionalProperties": {"type": "string"}}
            },
            "required": ["integrationId", "promptName"]
        }),
    }
}

/// `source_query` over `sources`.
pub fn source_query_spec(name: &str, sources: &[DataSource]) -> ToolSpec {
    let tables: Vec<String> = sources.iter().map(DataSource::describe).collect();
    ToolSpec {
        name: name.into(),
        description: format!(
            "Run a read-only SQL SELECT query over this conversation's data sources and get the result as a table. Tables: {}",
            tables.join("; ")
        ),
        parameters: json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "One SQL SELECT statement"}},
            "required": ["query"]
        }),
    }
}
