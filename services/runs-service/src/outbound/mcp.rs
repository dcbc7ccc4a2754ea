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
use tonic_types::StatusExt as _;

use crate::domain::ports::{
    Caller, Capabilities, Content, McpCallError, McpPort, McpPrompt, McpPromptArgument,
    McpResource, McpTool, PromptLine, ResourceData, ResourceKindOf, ToolFailure, ToolOutput,
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

/// mcp-service's status as the domain's error: the one place its codes are
/// read.
fn failure(status: Status) -> McpCallError {
    let message = status.message().to_owned();
    match status.code() {
        Code::DeadlineExceeded | Code::Cancelled => McpCallError::Timeout,
        Code::Unavailable => McpCallError::Unavailable(message),
        Code::ResourceExhausted => McpCallError::Exhausted {
            retry_after: status
                .get_details_retry_info()
                .and_then(|retry| retry.retry_delay),
            message,
        },
        Code::NotFound => McpCallError::NotFound(message),
        Code::FailedPrecondition
        | Code::PermissionDenied
        | Code::InvalidArgument
        | Code::Unauthenticated => McpCallError::Refused(message),
        _ => McpCallError::Failed(message),
    }
}

fn schema(value: Option<&prost_types::Struct>) -> Value {
    value.map_or_else(
        || serde_json::json!({"type": "object", "properties": {}}),
        struct_to_json,
    )
}

fn resource_content(contents: Option<&pb::ResourceContents>) -> Content {
    let Some(contents) = contents else {
        return Content::Resource {
            uri: String::new(),
            mime_type: String::new(),
            text: None,
            blob_bytes: None,
        };
    };
    let (text, blob_bytes) = match &contents.content {
        Some(pb::resource_contents::Content::Text(text)) => (Some(text.clone()), None),
        Some(pb::resource_contents::Content::Blob(blob)) => (None, Some(blob.len())),
        None => (None, None),
    };
    Content::Resource {
        uri: contents.uri.clone(),
        mime_type: contents.mime_type.clone(),
        text,
        blob_bytes,
    }
}

/// A content block of the contract as the domain's; `None` for an empty one.
fn content(block: &pb::ContentBlock) -> Option<Content> {
    Some(match block.block.as_ref()? {
        Block::Text(text) => Content::Text(text.text.clone()),
        Block::Image(image) => Content::Image {
            mime_type: image.mime_type.clone(),
            bytes: image.data.len(),
        },
        Block::Audio(audio) => Content::Audio {
            mime_type: audio.mime_type.clone(),
            bytes: audio.data.len(),
        },
        Block::Resource(resource) => resource_content(resource.resource.as_ref()),
        Block::ResourceLink(link) => Content::ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
        },
    })
}

fn failure_reason(reason: pb::ToolFailureReason) -> ToolFailure {
    use pb::ToolFailureReason as Reason;
    match reason {
        Reason::ToolError => ToolFailure::ToolError,
        Reason::Timeout => ToolFailure::Timeout,
        Reason::ResultTooLarge => ToolFailure::TooLarge,
        Reason::ServerUnreachable => ToolFailure::Unreachable,
        Reason::ConnectionLost => ToolFailure::ConnectionLost,
        Reason::ProtocolError => ToolFailure::Protocol,
        Reason::Unspecified => ToolFailure::Other,
    }
}

/// An ExecuteTool response as the domain's tool output: the structured
/// result in its exact JSON when mcp-service sends it (the `Struct` only from
/// an older one).
pub fn tool_output(response: pb::ExecuteToolResponse) -> ToolOutput {
    let failure = response
        .is_error
        .then(|| failure_reason(response.failure_reason()));
    let structured = if response.structured_content_json.is_empty() {
        response
            .structured_content
            .as_ref()
            .map(|s| struct_to_json(s).to_string())
    } else {
        Some(response.structured_content_json)
    };
    ToolOutput {
        failure,
        error_message: response.error_message,
        content: response.content.iter().filter_map(content).collect(),
        structured,
    }
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
        arguments: &str,
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
                    arguments: None,
                    session_scope: scope.to_owned(),
                    arguments_json: arguments.to_owned(),
                },
                timeout,
            ))
            .await
            .map_err(failure)?
            .into_inner();
        Ok(tool_output(response))
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
                content: m
                    .content
                    .as_ref()
                    .and_then(content)
                    .unwrap_or_else(|| Content::Text(String::new())),
            })
            .collect();
        Ok((response.description, lines))
    }
}
