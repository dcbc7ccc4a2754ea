//! `retrieve_mcp_resource`: a resource by integration and URI (templates
//! expanded with `parameters`) or by name. CSV becomes a data source of the
//! thread, text comes back as is (capped), binary is described.

use std::time::Duration;

use super::{
    ToolArguments,
    outcome::{ToolContext, ToolOutcome},
};
use crate::domain::{
    datasource::DataSources,
    ids::IntegrationId,
    ports::{McpPort, McpResourceRequest, ResourceData, ResourceKindOf},
    texts,
};

/// Longest text resource handed to the model, in characters.
const TEXT_RESOURCE_CAP: usize = 50_000;

/// The resource a call names: its integration, its URI (or template) and its
/// discovered name, when known.
struct Wanted {
    integration_id: IntegrationId,
    uri: String,
    name: Option<String>,
}

fn failed(message: impl std::fmt::Display) -> ToolOutcome {
    ToolOutcome::failed(texts::resource_failed(message))
}

/// Reads the resource the model names and hands it over.
pub(super) async fn retrieve(
    mcp: &dyn McpPort,
    sources: &dyn DataSources,
    context: &ToolContext,
    arguments: &ToolArguments,
    timeout: Duration,
) -> ToolOutcome {
    let wanted = match locate(context, arguments) {
        Ok(wanted) => wanted,
        Err(outcome) => return outcome,
    };
    tracing::info!(integration_id = %wanted.integration_id, uri = %wanted.uri, "retrieving an MCP resource");
    let scope = context.thread_id.to_string();
    let read = McpResourceRequest {
        integration_id: wanted.integration_id,
        uri: &wanted.uri,
        parameters: &arguments.object_arg("parameters"),
        scope: &scope,
    };
    match mcp.retrieve_resource(&context.caller, read, timeout).await {
        Ok(resource) => deliver(sources, context, &wanted, resource).await,
        Err(error) => failed(texts::mcp_error(&error)),
    }
}

/// Which resource the arguments name: by name among the discovered ones, or
/// by one of the run's integrations and a URI.
fn locate(context: &ToolContext, arguments: &ToolArguments) -> Result<Wanted, ToolOutcome> {
    match (
        arguments.text_arg("integrationId"),
        arguments.text_arg("resourceUri"),
        arguments.text_arg("resourceName"),
    ) {
        (_, None, Some(wanted)) => context
            .capabilities
            .iter()
            .find_map(|c| {
                c.resources
                    .iter()
                    .chain(&c.resource_templates)
                    .find(|r| r.name == wanted)
                    .map(|r| Wanted {
                        integration_id: c.integration_id,
                        uri: r.uri.clone(),
                        name: Some(r.name.clone()),
                    })
            })
            .ok_or_else(|| failed(texts::no_resource_named(wanted))),
        (None, _, _) => Err(failed(texts::parameter_required("integrationId"))),
        (Some(_), None, None) => Err(failed(texts::parameter_required("resourceUri"))),
        (Some(named), Some(uri), _) => {
            let integration = context
                .integration(named)
                .ok_or_else(|| failed(texts::integration_unavailable(named)))?;
            Ok(Wanted {
                integration_id: integration.integration_id,
                uri: uri.to_owned(),
                name: integration
                    .resources
                    .iter()
                    .chain(&integration.resource_templates)
                    .find(|r| r.uri == uri)
                    .map(|r| r.name.clone()),
            })
        }
    }
}

/// What the model gets for a resource read: CSV imported, text capped,
/// binary described.
async fn deliver(
    sources: &dyn DataSources,
    context: &ToolContext,
    wanted: &Wanted,
    resource: ResourceData,
) -> ToolOutcome {
    match resource.kind {
        ResourceKindOf::Csv => {
            // A server may send CSV as text or as a blob; both are bytes.
            let mut csv = resource.text.unwrap_or_default().into_bytes();
            csv.extend_from_slice(&resource.csv_blob);
            let name = source_name(
                &resource.uri,
                wanted.name.as_deref().filter(|_| !wanted.uri.contains('{')),
            );
            match sources
                .import_csv(
                    context.thread_id,
                    &name,
                    &resource.uri,
                    Some(wanted.integration_id),
                    &csv,
                )
                .await
            {
                Ok(source) => ToolOutcome::succeeded(texts::csv_imported(&resource.uri, &source))
                    .changing_sources(),
                Err(error) => failed(texts::import_failed(&error)),
            }
        }
        ResourceKindOf::Text => ToolOutcome::succeeded(texts::text_resource(
            resource.text.unwrap_or_default(),
            TEXT_RESOURCE_CAP,
        )),
        ResourceKindOf::Binary => ToolOutcome::succeeded(texts::binary_resource(
            &resource.uri,
            &resource.mime_type,
            resource.blob_len,
        )),
    }
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
