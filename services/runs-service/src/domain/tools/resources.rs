//! `retrieve_mcp_resource`: a resource by integration and URI (templates
//! expanded with `parameters`), by URI alone when exactly one integration
//! lists it, or by name. CSV becomes a data source of the thread, text
//! comes back as is (capped), binary is described. [`Reader`] is the one
//! path every resource tool reads through.

use bytes::Bytes;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    ToolArguments,
    lookup::{self, Found, Wanted},
    outcome::{ToolContext, ToolOutcome},
};
use crate::domain::{
    datasource::DataSources,
    ports::{McpPort, McpResourceRequest, ResourceData, ResourceKindOf},
    texts,
};

/// Longest text resource handed to the model, in characters.
const TEXT_RESOURCE_CAP: usize = 50_000;

/// How a resource tool words a failure: its own sentence around the cause.
pub(super) type Failed = fn(&str) -> String;

/// What reads a resource for the model: mcp-service, the thread's data
/// sources (a CSV resource becomes one), the call's context and time limit.
pub(super) struct Reader<'a> {
    pub(super) mcp: &'a dyn McpPort,
    pub(super) sources: &'a dyn DataSources,
    pub(super) context: &'a ToolContext,
    pub(super) timeout: Duration,
}

fn retrieval_failed(message: &str) -> String {
    texts::resource_failed(message)
}

/// Reads the resource the model names and hands it over.
pub(super) async fn retrieve(reader: &Reader<'_>, arguments: &ToolArguments) -> ToolOutcome {
    match locate(reader.context, arguments) {
        Ok(wanted) => {
            let parameters = arguments.object_arg("parameters");
            reader.read(&wanted, &parameters, retrieval_failed).await
        }
        Err(message) => ToolOutcome::failed(retrieval_failed(&message)),
    }
}

/// Which resource the arguments name: by name among the discovered ones, by
/// one of the run's integrations and a URI, or by a URI only one of them
/// lists. The error is the cause, for the tool's failure sentence.
fn locate(context: &ToolContext, arguments: &ToolArguments) -> Result<Wanted, String> {
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
            .ok_or_else(|| texts::no_resource_named(wanted)),
        (None, Some(uri), _) => match lookup::by_uri(&context.capabilities, uri) {
            Found::One(wanted) => Ok(wanted),
            Found::Several(_) | Found::Nothing => Err(texts::parameter_required("integrationId")),
        },
        (None, None, None) => Err(texts::parameter_required("integrationId")),
        (Some(_), None, None) => Err(texts::parameter_required("resourceUri")),
        (Some(named), Some(uri), _) => {
            let integration = context
                .integration(named)
                .ok_or_else(|| texts::integration_unavailable(named))?;
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

impl Reader<'_> {
    /// Reads `wanted` (a template expanded with `parameters`) through
    /// mcp-service and hands it over; a failure is worded by `failed`.
    pub(super) async fn read(
        &self,
        wanted: &Wanted,
        parameters: &Map<String, Value>,
        failed: Failed,
    ) -> ToolOutcome {
        let integration_id = wanted.integration_id;
        tracing::info!(%integration_id, uri = %wanted.uri, "retrieving an MCP resource");
        let scope = self.context.thread_id.to_string();
        let read = McpResourceRequest {
            integration_id,
            uri: &wanted.uri,
            parameters,
            scope: &scope,
        };
        let mut resource = match self
            .mcp
            .retrieve_resource(&self.context.caller, read, self.timeout)
            .await
        {
            Ok(resource) => resource,
            Err(error) => {
                tracing::warn!(
                    %integration_id,
                    uri = %wanted.uri,
                    status = "failed",
                    error_type = error.kind(),
                    error = %error,
                    "MCP resource retrieval failed"
                );
                return ToolOutcome::failed(failed(&texts::mcp_error(&error)));
            }
        };
        let kind = kind_name(resource.kind);
        let redacted = std::mem::take(&mut resource.redacted);
        let mut outcome = self.deliver(wanted, resource, failed).await;
        if !redacted.is_empty() && !outcome.is_error {
            outcome.text = format!("{}\n\n{}", outcome.text, texts::redacted(&redacted));
        }
        if outcome.is_error {
            tracing::warn!(%integration_id, uri = %wanted.uri, status = "failed", error_type = "import", kind, "MCP resource retrieval failed");
        } else {
            tracing::info!(%integration_id, uri = %wanted.uri, status = "succeeded", kind, "MCP resource retrieved");
        }
        outcome
    }

    /// What the model gets for a resource read: CSV imported, text capped,
    /// binary described.
    async fn deliver(
        &self,
        wanted: &Wanted,
        resource: ResourceData,
        failed: Failed,
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
                match self
                    .sources
                    .import_csv(
                        self.context.thread_id,
                        &name,
                        &resource.uri,
                        Some(wanted.integration_id),
                        Bytes::from(csv),
                    )
                    .await
                {
                    Ok(source) => {
                        ToolOutcome::succeeded(texts::csv_imported(&resource.uri, &source))
                            .changing_sources()
                    }
                    Err(error) => ToolOutcome::failed(failed(&texts::import_failed(&error))),
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
}

fn kind_name(kind: ResourceKindOf) -> &'static str {
    match kind {
        ResourceKindOf::Csv => "csv",
        ResourceKindOf::Text => "text",
        ResourceKindOf::Binary => "binary",
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
