//! The built-in tools as the model is offered them.

use serde_json::json;

use crate::domain::{datasource::DataSource, model::ToolSpec};

/// `retrieve_mcp_resource`.
pub fn retrieve_resource_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "Retrieve a resource from an MCP integration. CSV resources are automatically imported as data sources that can be queried with the source_query tool. Text resources return their content directly. Use this when you need to access datasets, files, or configuration from MCP servers.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "integrationId": {"type": "string", "description": "The ID of the MCP integration to retrieve the resource from"},
                "resourceUri": {"type": "string", "description": "The URI of the resource to retrieve (e.g., \"dataset://sales\" or \"file://config.json\")"},
                "resourceName": {"type": "string", "description": "Alternative to integrationId and resourceUri: a resource name from the available resources list"},
                "parameters": {"type": "object", "description": "Optional parameters for parameterized resource URIs (e.g., {category: \"electronics\"})", "additionalProperties": true}
            },
            "required": []
        }),
    }
}

/// `mcp_list_resources`.
pub fn list_resources_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "List all available MCP resources and resource templates with their integration IDs, URIs, names, descriptions and MIME types.".into(),
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
