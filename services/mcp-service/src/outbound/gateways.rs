//! One [`McpGateway`] over the kinds of integration: an OpenAPI
//! integration's calls go to the OpenAPI gateway, a gRPC one's to the gRPC
//! gateway, the others' to the MCP servers' (`rmcp`). Everything above (policy, approvals, guardrails,
//! audit, limits, both front doors) sees one gateway, so a kind added here
//! inherits all of it.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::model::{CompleteResult, GetPromptResult, ReadResourceResult};

use crate::{
    domain::{
        integration::{Integration, IntegrationId},
        outcome::{Outcome, ToolOutcome},
        ports::{
            CallError, Discovery, InputAnswers, McpGateway, ProbeReport, SessionRequest,
            SessionScope, ToolCall,
        },
        transport::Transport,
    },
    outbound::{grpc::GrpcGateway, mcp::gateway::RmcpGateway, openapi::OpenApiGateway},
};

/// The gateway of every kind of integration.
#[derive(Debug)]
pub struct Gateways {
    mcp: Arc<RmcpGateway>,
    openapi: OpenApiGateway,
    grpc: GrpcGateway,
}

impl Gateways {
    /// MCP servers through `mcp`, HTTP APIs through `openapi`, gRPC
    /// services through `grpc`.
    pub fn new(mcp: Arc<RmcpGateway>, openapi: OpenApiGateway, grpc: GrpcGateway) -> Self {
        Self { mcp, openapi, grpc }
    }

    fn of(&self, integration: &Integration) -> &dyn McpGateway {
        match integration.transport {
            Transport::OpenApi(_) => &self.openapi,
            Transport::Grpc(_) => &self.grpc,
            Transport::StreamableHttp(_) | Transport::Stdio(_) => self.mcp.as_ref(),
        }
    }
}

#[async_trait]
impl McpGateway for Gateways {
    async fn probe(&self, integration: &Integration) -> ProbeReport {
        self.of(integration).probe(integration).await
    }

    async fn discover(
        &self,
        integration: &Integration,
        user: &str,
        bypass_cache: bool,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError> {
        self.of(integration)
            .discover(integration, user, bypass_cache, timeout)
            .await
    }

    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError> {
        self.of(integration)
            .call_tool(integration, scope, call, timeout)
            .await
    }

    async fn read_resource(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        uri: &str,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<ReadResourceResult>, CallError> {
        self.of(integration)
            .read_resource(integration, scope, uri, answers, timeout)
            .await
    }

    async fn get_prompt(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<GetPromptResult>, CallError> {
        self.of(integration)
            .get_prompt(integration, scope, name, arguments, answers, timeout)
            .await
    }

    async fn session_request(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        request: SessionRequest,
        timeout: Duration,
    ) -> Result<Option<CompleteResult>, CallError> {
        self.of(integration)
            .session_request(integration, scope, request, timeout)
            .await
    }

    async fn forget(&self, integration: IntegrationId) {
        self.mcp.forget(integration).await;
        self.openapi.forget(integration).await;
        self.grpc.forget(integration).await;
    }
}
