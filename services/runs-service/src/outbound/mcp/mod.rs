//! [`McpPort`] over gRPC: mcp-service called with the caller's own token (so
//! it enforces the same organization) and the run's trace context.

use std::time::Duration;

use async_trait::async_trait;
use secrecy::ExposeSecret as _;
use switchboard_proto::mcp::v1::{
    self as pb, approval_service_client::ApprovalServiceClient,
    mcp_service_client::McpServiceClient,
};
use tonic::{Request, Status, transport::Channel};

pub use self::convert::tool_output;
use self::{
    convert::{capabilities, content, redactions},
    status::{decide_failure, failure},
};
use crate::domain::{
    ids::IntegrationId,
    ports::{
        ApprovalDecision, Caller, Capabilities, Content, DecideError, McpCallError, McpPort,
        McpPromptRequest, McpResourceRequest, McpToolRequest, PromptLine, ResourceData,
        ResourceKindOf, ToolOutput,
    },
};

mod convert;
mod endpoints;
mod replicas;
mod status;
mod tls;

use self::replicas::Replicas;
pub use self::{endpoints::McpEndpoints, replicas::ranked as replica_order, tls::McpTls};

/// tonic's own limit on a message read, the default of
/// [`GrpcMcp::with_max_message_bytes`].
const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// mcp-service's gRPC client.
#[derive(Debug, Clone)]
pub struct GrpcMcp {
    replicas: Replicas,
    /// The largest answer read from mcp-service (a tool result, a resource).
    max_message_bytes: usize,
}

impl GrpcMcp {
    /// A client of mcp-service's replicas, connecting on first use (so
    /// runs-service starts, and runs go on, while mcp-service is down).
    pub async fn new(endpoints: &McpEndpoints) -> Self {
        Self {
            replicas: endpoints.connect().await,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    /// The same, reading answers of up to `bytes` (the service's
    /// `SWITCHBOARD_MAX_MESSAGE_BYTES`), so that a result mcp-service may
    /// send is one runs-service may read.
    pub fn with_max_message_bytes(self, bytes: usize) -> Self {
        Self {
            max_message_bytes: bytes,
            ..self
        }
    }

    /// A client of `channel` within the answer size.
    fn client(&self, channel: Channel) -> McpServiceClient<Channel> {
        McpServiceClient::new(channel).max_decoding_message_size(self.max_message_bytes)
    }

    /// Sends one call to the replica that ranks first for `scope`, and
    /// again to the next while the call provably never left (its
    /// connection could not be made): a replica that went away costs no
    /// call, and no call runs twice.
    async fn call<M, R, F, Fut>(
        &self,
        caller: &Caller,
        scope: Option<&str>,
        message: M,
        timeout: Duration,
        send: F,
    ) -> Result<R, McpCallError>
    where
        M: Clone,
        F: Fn(Channel, Request<M>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        self.send(caller, scope, message, timeout, send)
            .await
            .map_err(|status| failure(&status))
    }

    /// [`Self::call`], answering mcp-service's status as it came.
    async fn send<M, R, F, Fut>(
        &self,
        caller: &Caller,
        scope: Option<&str>,
        message: M,
        timeout: Duration,
        send: F,
    ) -> Result<R, Status>
    where
        M: Clone,
        F: Fn(Channel, Request<M>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let replicas = self.replicas.for_call(scope);
        let Some(first) = replicas.first() else {
            return Err(Status::unavailable("no mcp-service replica is known"));
        };
        let mut order = replicas.iter().chain(std::iter::repeat(first));
        let mut attempt = 1;
        loop {
            let channel = order.next().unwrap_or(first).clone();
            match send(channel, request(caller, message.clone(), timeout)).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if attempt < CONNECT_ATTEMPTS && never_sent(&status) => {
                    tracing::debug!(%status, attempt, "mcp-service call not sent; trying the next replica");
                    attempt += 1;
                }
                Err(status) => return Err(status),
            }
        }
    }
}

/// Connections tried for one call before its failure to connect is final.
const CONNECT_ATTEMPTS: u32 = 3;

/// Whether a failed call provably never reached mcp-service: no connection
/// could be made for it.
fn never_sent(status: &Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.downcast_ref::<tonic::ConnectError>().is_some() {
            return true;
        }
        source = error.source();
    }
    false
}

/// An agent's allow-list as mcp-service reads it.
fn allow_list(tools: Option<&[String]>) -> Option<pb::ToolAllowList> {
    tools.map(|tools| pb::ToolAllowList {
        tools: tools.to_vec(),
    })
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
        integration_id: IntegrationId,
        allowed_tools: Option<&[String]>,
        timeout: Duration,
    ) -> Result<Capabilities, McpCallError> {
        let response = self
            .call(
                caller,
                // Discovery is cached per replica: one integration's
                // discoveries meet in one.
                Some(&integration_id.to_string()),
                pb::DiscoverRequest {
                    integration_id: integration_id.to_string(),
                    bypass_cache: false,
                    allowed_tools: allow_list(allowed_tools),
                },
                timeout,
                |channel, request| async move { self.client(channel).discover(request).await },
            )
            .await?;
        capabilities(integration_id, response)
    }

    async fn execute_tool(
        &self,
        caller: &Caller,
        call: McpToolRequest<'_>,
        timeout: Duration,
    ) -> Result<ToolOutput, McpCallError> {
        let answers = call.answers.cloned().unwrap_or_default();
        let response = self
            .call(
                caller,
                Some(call.scope),
                pb::ExecuteToolRequest {
                    integration_id: call.integration_id.to_string(),
                    tool_name: call.tool.to_owned(),
                    arguments: None,
                    session_scope: call.scope.to_owned(),
                    arguments_json: call.arguments.to_owned(),
                    input_responses: answers.responses.into_iter().collect(),
                    request_state: answers.request_state,
                    task_id: answers.task_id,
                    approval_id: call.approval_id.map(str::to_owned),
                    allowed_tools: allow_list(call.allowed_tools),
                },
                timeout,
                |channel, request| async move { self.client(channel).execute_tool(request).await },
            )
            .await?;
        Ok(tool_output(response))
    }

    async fn retrieve_resource(
        &self,
        caller: &Caller,
        read: McpResourceRequest<'_>,
        timeout: Duration,
    ) -> Result<ResourceData, McpCallError> {
        let response = self
            .call(
                caller,
                Some(read.scope),
                pb::RetrieveResourceRequest {
                    integration_id: read.integration_id.to_string(),
                    uri: read.uri.to_owned(),
                    parameters_json: serde_json::Value::from(read.parameters.clone()).to_string(),
                    session_scope: read.scope.to_owned(),
                    ..Default::default()
                },
                timeout,
                |channel, request| async move {
                    self.client(channel).retrieve_resource(request).await
                },
            )
            .await?;
        let kind = match response.kind() {
            pb::ResourceKind::Csv => ResourceKindOf::Csv,
            pb::ResourceKind::Binary => ResourceKindOf::Binary,
            _ => ResourceKindOf::Text,
        };
        let redacted = redactions(&response.guardrail_findings);
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
            redacted,
        })
    }

    async fn get_prompt(
        &self,
        caller: &Caller,
        prompt: McpPromptRequest<'_>,
        timeout: Duration,
    ) -> Result<(String, Vec<PromptLine>), McpCallError> {
        let response = self
            .call(
                caller,
                Some(prompt.scope),
                pb::GetPromptRequest {
                    integration_id: prompt.integration_id.to_string(),
                    name: prompt.name.to_owned(),
                    arguments_json: serde_json::Value::from(prompt.arguments.clone()).to_string(),
                    session_scope: prompt.scope.to_owned(),
                    ..Default::default()
                },
                timeout,
                |channel, request| async move { self.client(channel).get_prompt(request).await },
            )
            .await?;
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

    async fn decide_approval(
        &self,
        caller: &Caller,
        decision: ApprovalDecision<'_>,
        timeout: Duration,
    ) -> Result<(), DecideError> {
        self.send(
            caller,
            None,
            pb::DecideApprovalRequest {
                approval_id: decision.approval_id.to_owned(),
                approve: decision.approve,
                comment: decision.comment.to_owned(),
            },
            timeout,
            |channel, request| async move {
                ApprovalServiceClient::new(channel)
                    .decide_approval(request)
                    .await
            },
        )
        .await
        .map(drop)
        .map_err(|status| decide_failure(&status))
    }
}
