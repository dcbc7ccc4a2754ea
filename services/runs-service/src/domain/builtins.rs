//! Tools built into runs-service, offered next to the agent's MCP tools:
//! MCP resources and prompts as tools the model can call, and SQL over the
//! thread's data sources.
//!
//! - `retrieve_mcp_resource`: a resource by integration and URI (templates
//!   expanded with `parameters`) or by name; CSV becomes a data source of the
//!   thread, text comes back as is (capped), binary is described.
//! - `mcp_list_resources`: every resource and template of the integrations.
//! - `retrieve_mcp_prompt`: a prompt rendered with role labels.
//! - `source_query`: read-only SQL over the thread's data sources.

use std::{sync::Arc, time::Duration};

use serde_json::{Map, Value, json};

use super::{
    datasource::{ColumnType, DataSource, DataSources, QueryError},
    entities::Agent,
    model::ToolSpec,
    ports::{Caller, Capabilities, McpPort, ResourceKindOf},
    texts,
};

/// Tool names.
pub const RETRIEVE_RESOURCE: &str = "retrieve_mcp_resource";
/// Tool names.
pub const LIST_RESOURCES: &str = "mcp_list_resources";
/// Tool names.
pub const RETRIEVE_PROMPT: &str = "retrieve_mcp_prompt";
/// Tool names.
pub const SOURCE_QUERY: &str = "source_query";

/// Longest text resource handed to the model, in characters.
const TEXT_RESOURCE_CAP: usize = 50_000;
/// Most resources, templates and prompts listed in the system prompt.
const PROMPT_LIST_CAP: usize = 50;

/// What a built-in tool call may use.
#[derive(Debug, Clone)]
pub struct BuiltinContext {
    /// The caller the run acts for.
    pub caller: Caller,
    /// The run's thread.
    pub thread_id: String,
    /// What the agent's integrations offer.
    pub capabilities: Arc<Vec<Capabilities>>,
}

/// The built-in tools.
pub struct Builtins {
    mcp: Arc<dyn McpPort>,
    sources: Arc<dyn DataSources>,
    timeout: Duration,
}

impl std::fmt::Debug for Builtins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builtins")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn text_arg<'a>(arguments: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn resource_failed(message: impl std::fmt::Display) -> (String, bool) {
    (format!("Resource retrieval failed: {message}"), true)
}

fn prompt_failed(message: impl std::fmt::Display) -> (String, bool) {
    (format!("Prompt retrieval failed: {message}"), true)
}

/// The data source name of a resource: its discovered name, else the last
/// segment of its URI.
fn source_name(uri: &str, name: Option<&str>) -> String {
    name.map(str::to_owned).unwrap_or_else(|| {
        let path = uri.split(['?', '#']).next().unwrap_or(uri);
        let last = path.rsplit('/').find(|s| !s.is_empty()).unwrap_or(path);
        last.trim_end_matches(".csv").to_owned()
    })
}

fn type_name(column_type: ColumnType) -> &'static str {
    match column_type {
        ColumnType::Text => "text",
        ColumnType::Integer => "integer",
        ColumnType::Float => "float",
        ColumnType::Boolean => "boolean",
        ColumnType::Date => "date",
        ColumnType::Timestamp => "timestamp",
    }
}

fn imported(uri: &str, source: &DataSource) -> String {
    let columns: Vec<String> = source
        .columns
        .iter()
        .map(|c| format!("{} ({})", c.name, type_name(c.column_type)))
        .collect();
    format!(
        "CSV resource imported as data source: {uri}\nTable: {table}\nColumns: {columns}\nRows: {rows}\nYou can now query this data using the source_query tool, for example: SELECT * FROM {table} LIMIT 10",
        table = source.table_name,
        columns = columns.join(", "),
        rows = source.row_count,
    )
}

impl Builtins {
    /// Built-in tools reaching MCP through `mcp` and storing data sources in
    /// `sources`; each call may take `timeout`.
    pub fn new(mcp: Arc<dyn McpPort>, sources: Arc<dyn DataSources>, timeout: Duration) -> Self {
        Self {
            mcp,
            sources,
            timeout,
        }
    }

    /// The thread's data sources (none when they cannot be read).
    pub async fn sources(&self, thread_id: &str) -> Vec<DataSource> {
        self.sources.list(thread_id).await.unwrap_or_else(|error| {
            tracing::warn!(thread_id, error = %error, "failed to list data sources");
            Vec::new()
        })
    }

    /// The built-in tools offered to `agent`'s run: the MCP resource and
    /// prompt tools when it has integrations (resource tools unless turned
    /// off), `source_query` when the thread has data sources.
    pub fn specs(&self, agent: &Agent, sources: &[DataSource]) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        let has_integrations = !agent.config.mcp_integration_ids.is_empty();
        if has_integrations && !agent.config.disable_resource_tools {
            specs.push(ToolSpec {
                name: RETRIEVE_RESOURCE.into(),
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
            });
            specs.push(ToolSpec {
                name: LIST_RESOURCES.into(),
                description: "List all available MCP resources and resource templates with their integration IDs, URIs, names, descriptions and MIME types.".into(),
                parameters: json!({"type": "object", "properties": {}, "required": []}),
            });
        }
        if has_integrations {
            specs.push(ToolSpec {
                name: RETRIEVE_PROMPT.into(),
                description: "Retrieve a prompt from an MCP integration, rendered with the given arguments.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "integrationId": {"type": "string", "description": "The ID of the MCP integration that offers the prompt"},
                        "promptName": {"type": "string", "description": "The name of the prompt"},
                        "arguments": {"type": "object", "description": "The prompt's arguments, by name", "additionalProperties": {"type": "string"}}
                    },
                    "required": ["integrationId", "promptName"]
                }),
            });
        }
        if !sources.is_empty() {
            let tables: Vec<String> = sources.iter().map(DataSource::describe).collect();
            specs.push(ToolSpec {
                name: SOURCE_QUERY.into(),
                description: format!(
                    "Run a read-only SQL SELECT query over this conversation's data sources and get the result as a table. Tables: {}",
                    tables.join("; ")
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "One SQL SELECT statement"}},
                    "required": ["query"]
                }),
            });
        }
        specs
    }

    /// The system prompt section listing resources, templates and prompts
    /// and how to reach them.
    pub fn prompt_section(&self, agent: &Agent, capabilities: &[Capabilities]) -> Option<String> {
        if agent.config.mcp_integration_ids.is_empty() {
            return None;
        }
        let mut out = String::new();
        let resources: Vec<_> = capabilities
            .iter()
            .flat_map(|c| c.resources.iter().map(move |r| (c, r)))
            .take(PROMPT_LIST_CAP)
            .collect();
        let templates: Vec<_> = capabilities
            .iter()
            .flat_map(|c| c.resource_templates.iter().map(move |r| (c, r)))
            .take(PROMPT_LIST_CAP)
            .collect();
        let prompts: Vec<_> = capabilities
            .iter()
            .flat_map(|c| c.prompts.iter().map(move |p| (c, p)))
            .take(PROMPT_LIST_CAP)
            .collect();
        if !agent.config.disable_resource_tools && (!resources.is_empty() || !templates.is_empty())
        {
            out.push_str("Resource Access Guidelines:\n");
            out.push_str("1. Use the \"retrieve_mcp_resource\" tool to fetch resource content.\n");
            out.push_str(
                "2. Use the \"mcp_list_resources\" tool to see all available resources.\n",
            );
            out.push_str("3. Provide either \"integrationId\" and \"resourceUri\" (with \"parameters\" for templates), or \"resourceName\".\n");
            out.push_str("4. CSV resources become data sources you can query with the \"source_query\" tool.\n");
            if !resources.is_empty() {
                out.push_str("\nAvailable resources:\n");
                for (i, (integration, r)) in resources.iter().enumerate() {
                    out.push_str(&format!(
                        "{}. {} - {}\n   URI: {}\n   Integration: {}\n",
                        i + 1,
                        r.name,
                        r.description,
                        r.uri,
                        integration.integration_id
                    ));
                    if !r.mime_type.is_empty() {
                        out.push_str(&format!("   Type: {}\n", r.mime_type));
                    }
                }
            }
            if !templates.is_empty() {
                out.push_str(
                    "\nResource templates (fill the {placeholders} with \"parameters\"):\n",
                );
                for (i, (integration, t)) in templates.iter().enumerate() {
                    out.push_str(&format!(
                        "{}. {} - {}\n   URI template: {}\n   Integration: {}\n",
                        i + 1,
                        t.name,
                        t.description,
                        t.uri,
                        integration.integration_id
                    ));
                }
            }
        }
        if !prompts.is_empty() {
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
                out.push_str(&format!(
                    "{}. {} - {} (integration {}; arguments: {})\n",
                    i + 1,
                    p.name,
                    p.description,
                    integration.integration_id,
                    if arguments.is_empty() {
                        "none".to_owned()
                    } else {
                        arguments.join(", ")
                    }
                ));
            }
        }
        let out = out.trim().to_owned();
        (!out.is_empty()).then_some(out)
    }

    /// Runs built-in tool `name`; returns the text for the model and whether
    /// it is an error.
    pub async fn execute(
        &self,
        context: &BuiltinContext,
        name: &str,
        arguments: Map<String, Value>,
    ) -> (String, bool) {
        match name {
            RETRIEVE_RESOURCE => self.retrieve_resource(context, &arguments).await,
            LIST_RESOURCES => (list_resources(&context.capabilities), false),
            RETRIEVE_PROMPT => self.retrieve_prompt(context, &arguments).await,
            SOURCE_QUERY => self.query(context, &arguments).await,
            other => (texts::tool_not_found(other), true),
        }
    }

    async fn retrieve_resource(
        &self,
        context: &BuiltinContext,
        arguments: &Map<String, Value>,
    ) -> (String, bool) {
        let parameters = arguments
            .get("parameters")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let (integration_id, uri, name) = match (
            text_arg(arguments, "integrationId"),
            text_arg(arguments, "resourceUri"),
            text_arg(arguments, "resourceName"),
        ) {
            (_, None, Some(wanted)) => {
                let found = context.capabilities.iter().find_map(|c| {
                    c.resources
                        .iter()
                        .chain(&c.resource_templates)
                        .find(|r| r.name == wanted)
                        .map(|r| {
                            (
                                c.integration_id.clone(),
                                r.uri.clone(),
                                Some(r.name.clone()),
                            )
                        })
                });
                match found {
                    Some(found) => found,
                    None => {
                        return resource_failed(format!(
                            "no resource is named {wanted}; use mcp_list_resources to see the available resources"
                        ));
                    }
                }
            }
            (None, _, _) => return resource_failed("integrationId parameter is required"),
            (Some(_), None, None) => return resource_failed("resourceUri parameter is required"),
            (Some(integration_id), Some(uri), _) => {
                let name = context
                    .capabilities
                    .iter()
                    .filter(|c| c.integration_id == integration_id)
                    .flat_map(|c| c.resources.iter().chain(&c.resource_templates))
                    .find(|r| r.uri == uri)
                    .map(|r| r.name.clone());
                (integration_id.to_owned(), uri.to_owned(), name)
            }
        };
        if !context
            .capabilities
            .iter()
            .any(|c| c.integration_id == integration_id)
        {
            return resource_failed(format!(
                "the integration {integration_id} is not available in this conversation"
            ));
        }
        tracing::info!(integration_id = %integration_id, uri = %uri, "retrieving an MCP resource");
        let resource = match self
            .mcp
            .retrieve_resource(
                &context.caller,
                &integration_id,
                &uri,
                parameters,
                &context.thread_id,
                self.timeout,
            )
            .await
        {
            Ok(resource) => resource,
            Err(error) => return resource_failed(error),
        };
        match resource.kind {
            ResourceKindOf::Csv => {
                // A server may send CSV as text or as a blob; both are bytes.
                let mut csv = resource.text.unwrap_or_default().into_bytes();
                csv.extend_from_slice(&resource.csv_blob);
                let name = source_name(
                    &resource.uri,
                    name.as_deref().filter(|_| !uri.contains('{')),
                );
                match self
                    .sources
                    .import_csv(
                        &context.thread_id,
                        &name,
                        &resource.uri,
                        Some(&integration_id),
                        &csv,
                    )
                    .await
                {
                    Ok(source) => (imported(&resource.uri, &source), false),
                    Err(error) => resource_failed(error),
                }
            }
            ResourceKindOf::Text => {
                let text = resource.text.unwrap_or_default();
                let total = text.chars().count();
                if total > TEXT_RESOURCE_CAP {
                    let cut: String = text.chars().take(TEXT_RESOURCE_CAP).collect();
                    (
                        format!(
                            "{cut}\n[The resource was cut at {TEXT_RESOURCE_CAP} of {total} characters.]"
                        ),
                        false,
                    )
                } else {
                    (text, false)
                }
            }
            ResourceKindOf::Binary => (
                format!(
                    "Binary resource {}: {}, {} bytes. Its content cannot be shown as text.",
                    resource.uri,
                    if resource.mime_type.is_empty() {
                        "unknown type"
                    } else {
                        &resource.mime_type
                    },
                    resource.blob_len
                ),
                false,
            ),
        }
    }

    async fn retrieve_prompt(
        &self,
        context: &BuiltinContext,
        arguments: &Map<String, Value>,
    ) -> (String, bool) {
        let Some(integration_id) = text_arg(arguments, "integrationId") else {
            return prompt_failed("integrationId parameter is required");
        };
        let Some(name) = text_arg(arguments, "promptName") else {
            return prompt_failed("promptName parameter is required");
        };
        if !context
            .capabilities
            .iter()
            .any(|c| c.integration_id == integration_id)
        {
            return prompt_failed(format!(
                "the integration {integration_id} is not available in this conversation"
            ));
        }
        let prompt_arguments = arguments
            .get("arguments")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        match self
            .mcp
            .get_prompt(
                &context.caller,
                integration_id,
                name,
                prompt_arguments,
                &context.thread_id,
                self.timeout,
            )
            .await
        {
            Ok((description, lines)) => {
                let mut out = format!("Prompt: {name}\n");
                if !description.is_empty() {
                    out.push_str(&format!("Description: {description}\n"));
                }
                for (i, line) in lines.iter().enumerate() {
                    let mut role = line.role.clone();
                    if let Some(first) = role.get_mut(0..1) {
                        first.make_ascii_uppercase();
                    }
                    out.push_str(&format!("\n{}. {role}: {}", i + 1, line.text));
                }
                (out, false)
            }
            Err(error) => prompt_failed(error),
        }
    }

    async fn query(
        &self,
        context: &BuiltinContext,
        arguments: &Map<String, Value>,
    ) -> (String, bool) {
        let Some(sql) = text_arg(arguments, "query") else {
            return (
                "Query failed: the query parameter is required".to_owned(),
                true,
            );
        };
        match self.sources.query(&context.thread_id, sql).await {
            Ok(result) => (result.to_text(), false),
            Err(QueryError::Engine(message)) => (format!("Query failed: {message}"), true),
            Err(QueryError::Refused(message)) => (format!("Query refused: {message}"), true),
            Err(QueryError::Timeout(limit)) => (
                format!(
                    "Query failed: it ran longer than {}s and was stopped",
                    limit.as_secs_f64()
                ),
                true,
            ),
            Err(QueryError::Internal(error)) => {
                tracing::error!(error = ?error, "data source query failed");
                ("Query failed: internal error".to_owned(), true)
            }
        }
    }
}

fn list_resources(capabilities: &[Capabilities]) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in capabilities {
        for r in &c.resources {
            count += 1;
            out.push_str(&format!(
                "- {} (integrationId: {}, uri: {}, mimeType: {}): {}\n",
                r.name, c.integration_id, r.uri, r.mime_type, r.description
            ));
        }
        for t in &c.resource_templates {
            count += 1;
            out.push_str(&format!(
                "- {} (integrationId: {}, uri template: {}, mimeType: {}): {}\n",
                t.name, c.integration_id, t.uri, t.mime_type, t.description
            ));
        }
    }
    if count == 0 {
        "No MCP resources are available.".to_owned()
    } else {
        format!("Found {count} available resources:\n{out}")
    }
}
