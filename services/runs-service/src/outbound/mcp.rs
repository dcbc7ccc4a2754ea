//! [`McpPort`] over gRPC: mcp-service called with the caller's own token (so
//! it enforces the same organization) and the run's trace context.

use std::time::Duration;

use async_trait::async_trait;
use secrecy::ExposeSecret as _;
use serde_json::{Map, Value};
use switchboard_proto::{
    json::{map_to_struct, struct_to_json},
    mcp::v1::{self as pb, content_block::Block, mcp_service_client::McpServiceClient},
};
use tonic::{Code, Request, Status, transport::Channel};

use crate::domain::ports::{
    Caller, Capabilities, McpCallError, McpPort, McpPrompt, McpPromptArgument, McpResource,
    McpTool, PromptLine, ResourceData, ResourceKindOf, ToolOutput,
};

/// mcp-service's gRPC client.
#[derive(Debug, Clone)]
pub struct GrpcMcp {
    channel: Channel,
}

impl GrpcMcp {
    /// A client of mcp-service at `url`, connecting on first use (so
    /// runs-service starts, and runs go on, while mcp-service is down).
    pub fn new(url: &str) -> anyhow::Result<Self> {
        let channel = Channel::from_shared(url.to_owned())?
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .connect_lazy();
        Ok(Self { channel })
    }

    fn client(&self) -> McpServiceClient<Channel> {
        McpServiceClient::new(self.channel.clone())
    }
}

fn request<T>(caller: &Caller, message: T, timeout: Duration) -> Request<T> {
    let mut request = Request::new(message);
    request.set_timeout(timeout);
    if let Some(token) = &caller.token
        && let Ok(value) = format!("Bearer {}", token.0.expose_secret()).parse()
    {
        request.metadata_mut().insert("authorization", value);
    }
    switchboard_telemetry::inject_current_context(request.metadata_mut());
    request
}

fn failure(status: Status) -> McpCallError {
    match status.code() {
        Code::DeadlineExceeded | Code::Cancelled => McpCallError::Timeout,
        Code::Unavailable => {
            McpCallError::Failed(format!("mcp-service is unavailable ({})", status.message()))
        }
        _ => McpCallError::Failed(status.message().to_owned()),
    }
}

fn schema(value: Option<&prost_types::Struct>) -> Value {
    value.map_or_else(
        || serde_json::json!({"type": "object", "properties": {}}),
        struct_to_json,
    )
}

fn describe_resource(contents: Option<&pb::ResourceContents>) -> String {
    match contents {
        Some(pb::ResourceContents {
            uri,
            content: Some(pb::resource_contents::Content::Text(text)),
            ..
        }) => format!("[resource {uri}]\n{text}"),
        Some(pb::ResourceContents {
            uri,
            mime_type,
            content: Some(pb::resource_contents::Content::Blob(blob)),
        }) => format!("[resource {uri}: {mime_type}, {} bytes]", blob.len()),
        Some(contents) => format!("[resource {}]", contents.uri),
        None => "[resource]".to_owned(),
    }
}

/// A tool result as the model reads it: text blocks joined, other blocks
/// described (binary content is never inlined), and the structured result as
/// JSON when no text carries it.
pub fn render_tool_result(response: &pb::ExecuteToolResponse) -> String {
    let mut lines = Vec::new();
    let mut has_text = false;
    for block in &response.content {
        match &block.block {
            Some(Block::Text(text)) => {
                has_text = true;
                lines.push(text.text.clone());
            }
            Some(Block::Image(image)) => {
                lines.push(format!(
                    "[image: {}, {} bytes]",
                    image.mime_type,
                    image.data.len()
                ));
            }
            Some(Block::Audio(audio)) => {
                lines.push(format!(
                    "[audio: {}, {} bytes]",
                    audio.mime_type,
                    audio.data.len()
                ));
            }
            Some(Block::Resource(resource)) => {
                lines.push(describe_resource(resource.resource.as_ref()))
            }
            Some(Block::ResourceLink(link)) => {
                lines.push(format!("[resource link: {} ({})]", link.uri, link.name));
            }
            None => {}
        }
    }
    if !has_text && let Some(structured) = &response.structured_content {
        lines.push(struct_to_json(structured).to_string());
    }
    lines.join("\n")
}

#[async_trait]
impl McpPort for GrpcMcp {
    async fn discover(
        &self,
        caller: &Caller,
        integration_id: &str,
        timeout: Duration,
    ) -> Result<Capabilities, McpCallError> {
        let response = self
            .client()
            .discover(request(
                caller,
                pb::DiscoverRequest {
                    integration_id: integration_id.to_owned(),
                    bypass_cache: false,
                },
                timeout,
            ))
            .await
            .map_err(failure)?
            .into_inner();
        let slug = response
            .integration
            .as_ref()
            .map(|i| i.slug.clone())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                McpCallError::Failed("mcp-service did not name the integration".into())
            })?;
        let resource =
            |uri: String, name: String, description: String, mime_type: String| McpResource {
                uri,
                name,
                description,
                mime_type,
            };
        Ok(Capabilities {
            integration_id: integration_id.to_owned(),
            slug,
            tools: response
                .tools
                .into_iter()
                .map(|t| McpTool {
                    input_schema: schema(t.input_schema.as_ref()),
                    name: t.name,
                    description: t.description,
                })
                .collect(),
            resources: response
                .resources
                .into_iter()
                .map(|r| resource(r.uri, r.name, r.description, r.mime_type))
                .collect(),
            resource_templates: response
                .resource_templates
                .into_iter()
                .map(|r| resource(r.uri_template, r.name, r.description, r.mime_type))
                .collect(),
            prompts: response
                .prompts
                .into_iter()
                .map(|p| McpPrompt {
                    name: p.name,
                    description: p.description,
                    arguments: p
                        .arguments
                        .into_iter()
                        .map(|a| McpPromptArgument {
                            name: a.name,
                            description: a.description,
                            required: a.required,
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    async fn execute_tool(
        &self,
        caller: &Caller,
        integration_id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        scope: &str,
        timeout: Duration,
    ) -> Result<ToolOutput, McpCallError> {
        let response = self
            .client()
            .execute_tool(request(
                caller,
                pb::ExecuteToolRequest {
                    integration_id: integration_id.to_owned(),
                    tool_name: tool.to_owned(),
                    arguments: Some(map_to_struct(&arguments)),
                    session_scope: scope.to_owned(),
                },
                timeout,
            ))
            .await
            .map_err(failure)?
            .into_inner();
        Ok(ToolOutput {
            is_error: response.is_error,
            text: render_tool_result(&response),
            error_message: response.error_message,
        })
    }

    async fn retrieve_resource(
        &self,
        caller: &Caller,
        integration_id: &str,
        uri: &str,
        parameters: Map<String, Value>,
        scope: &str,
        timeout: Duration,
    ) -> Result<ResourceData, McpCallError> {
        let response = self
            .client()
            .retrieve_resource(request(
                caller,
                pb::RetrieveResourceRequest {
                    integration_id: integration_id.to_owned(),
                    uri: uri.to_owned(),
                    parameters: Some(map_to_struct(&parameters)),
                    session_scope: scope.to_owned(),
                },
                timeout,
            ))
            .await
            .map_err(failure)?
            .into_inner();
        let kind = match response.kind() {
            pb::ResourceKind::Csv => ResourceKindOf::Csv,
            pb::ResourceKind::Binary => ResourceKindOf::Binary,
            _ => ResourceKindOf::Text,
        };
        let mut text: Option<String> = None;
        let mut blob_len = 0;
        let mut csv_blob = Vec::new();
        for contents in response.contents {
            match contents.content {
                Some(pb::resource_contents::Content::Text(t)) => {
                    text.get_or_insert_with(String::new).push_str(&t)
                }
                Some(pb::resource_contents::Content::Blob(b)) => {
                    blob_len += b.len();
                    if kind == ResourceKindOf::Csv {
                        csv_blob.extend_from_slice(&b);
                    }
                }
                None => {}
            }
        }
        Ok(ResourceData {
            uri: response.uri,
            mime_type: response.mime_type,
            kind,
            text,
            blob_len,
            csv_blob,
        })
    }

    async fn get_prompt(
        &self,
        caller: &Caller,
        integration_id: &str,
        name: &str,
        arguments: Map<String, Value>,
        scope: &str,
        timeout: Duration,
    ) -> Result<(String, Vec<PromptLine>), McpCallError> {
        let arguments = arguments
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, v)
            })
            .collect();
        let response = self
            .client()
            .get_prompt(request(
                caller,
                pb::GetPromptRequest {
                    integration_id: integration_id.to_owned(),
                    name: name.to_owned(),
                    arguments,
                    session_scope: scope.to_owned(),
                },
                timeout,
            ))
            .await
            .map_err(failure)?
            .into_inner();
        let lines = response
            .messages
            .iter()
            .map(|m| PromptLine {
                role: match m.role() {
                    pb::Role::Assistant => "assistant".to_owned(),
                    _ => "user".to_owned(),
                },
                text: match m.content.as_ref().and_then(|c| c.block.as_ref()) {
                    Some(Block::Text(t)) => t.text.clone(),
                    Some(Block::Resource(r)) => describe_resource(r.resource.as_ref()),
                    Some(Block::Image(i)) => {
                        format!("[image: {}, {} bytes]", i.mime_type, i.data.len())
                    }
                    Some(Block::Audio(a)) => {
                        format!("[audio: {}, {} bytes]", a.mime_type, a.data.len())
                    }
                    Some(Block::ResourceLink(l)) => {
                        format!("[resource link: {} ({})]", l.uri, l.name)
                    }
                    None => String::new(),
                },
            })
            .collect();
        Ok((response.description, lines))
    }
}
