//! [`McpPort`] over gRPC: mcp-service called with the caller's own token (so
//! it enforces the same organization) and the run's trace context.

use std::time::Duration;

use async_trait::async_trait;
use secrecy::ExposeSecret as _;
use serde_json::{Map, Value};
use switchboard_proto::{
    json::map_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use tonic::{Request, transport::Channel};

pub use self::convert::tool_output;
use self::convert::{capabilities, content, failure};
use crate::domain::ports::{
    Caller, Capabilities, Content, McpCallError, McpPort, PromptLine, ResourceData, ResourceKindOf,
    ToolOutput,
};

mod convert;

/// mcp-service's gRPC client.
#[derive(Debug, Clone)]
pub struct GrpcMcp {
    channel: Channel,
}

impl GrpcMcp {
    /// A client of mcp-service at `url`, connecting on first use (so
    /// runs-service starts, and runs go on, while mcp-service is down).
    /// HTTP/2 pings every `keepalive` (answered within `keepalive_timeout`)
    /// keep a connection that waits on a long tool call from being closed
    /// as idle by a proxy between the services, and find a dead peer.
    pub fn new(
        url: &str,
        keepalive: Duration,
        keepalive_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let channel = Channel::from_shared(url.to_owned())?
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(keepalive)
            .keep_alive_timeout(keepalive_timeout)
            .keep_alive_while_idle(true)
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
        capabilities(integration_id, response)
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
