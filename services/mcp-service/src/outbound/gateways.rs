//! One [`McpGateway`] over the kinds of integration: an MCP server's
//! calls go to the MCP client (`rmcp`), an OpenAPI integration's to the
//! OpenAPI gateway, a gRPC one's to the gRPC gateway. Everything above
//! (policy, approvals, guardrails, audit, limits, both front doors) sees
//! one gateway, so a kind added here inherits all of it. A kind that
//! offers tools only ([`ToolsOnly`]) is probed through its discovery, and
//! asked for resources, prompts or session requests it is refused here.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

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
    outbound::{
        grpc::GrpcGateway,
        mcp::gateway::RmcpGateway,
        openapi::{DocumentFetcher, OpenApiGateway},
    },
};

/// How long a probe of a tools-only kind waits when the integration sets
/// no connect time limit (a gRPC server's reflection is asked then).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The gateway of a kind of integration that offers tools and nothing
/// else: a team's own services (an HTTP API, a gRPC service).
#[async_trait]
pub trait ToolsOnly: Send + Sync {
    /// What the kind is called in a refusal: `an OpenAPI integration`.
    fn kind(&self) -> &'static str;

    /// The tools `integration` offers, within `timeout`.
    async fn discover(
        &self,
        integration: &Integration,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError>;

    /// Calls a tool of `integration` for `scope`'s user.
    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError>;

    /// Forgets what is kept of `integration` (it changed or went).
    async fn forget(&self, integration: IntegrationId);
}

/// The gateway of every kind of integration.
#[derive(Debug)]
pub struct Gateways {
    mcp: Arc<RmcpGateway>,
    openapi: OpenApiGateway,
    grpc: GrpcGateway,
}

/// Where an integration's requests go.
enum Route<'a> {
    Mcp(&'a RmcpGateway),
    Tools(&'a dyn ToolsOnly),
}

impl Gateways {
    /// MCP servers through `mcp`, HTTP APIs through `openapi`, gRPC
    /// services through `grpc`.
    pub fn new(mcp: Arc<RmcpGateway>, openapi: OpenApiGateway, grpc: GrpcGateway) -> Self {
        Self { mcp, openapi, grpc }
    }

    /// A fetcher of OpenAPI documents given by URL, with the OpenAPI
    /// integrations' client.
    pub fn document_fetcher(&self, timeout: Duration) -> DocumentFetcher {
        self.openapi.document_fetcher(timeout)
    }

    fn route(&self, integration: &Integration) -> Route<'_> {
        match integration.transport {
            Transport::OpenApi(_) => Route::Tools(&self.openapi),
            Transport::Grpc(_) => Route::Tools(&self.grpc),
            Transport::StreamableHttp(_) | Transport::Stdio(_) => Route::Mcp(self.mcp.as_ref()),
        }
    }
}

/// What a tools-only kind is refused.
fn no_such(gateway: &dyn ToolsOnly, what: &str) -> CallError {
    CallError::Upstream {
        code: -32601,
        message: format!("{} offers no {what}", gateway.kind()),
    }
}

/// A tools-only kind's probe: its discovery, timed.
async fn probe_tools(gateway: &dyn ToolsOnly, integration: &Integration) -> ProbeReport {
    let started = Instant::now();
    let mut report = ProbeReport::default();
    let timeout = integration.timeouts.connect_or(PROBE_TIMEOUT);
    match gateway.discover(integration, timeout).await {
        Ok(discovery) => {
            report.server = Some(discovery.server.clone());
            report.tool_count = discovery.tools.len();
        }
        Err(error) => report.error = Some(error.to_string()),
    }
    report.latency = started.elapsed();
    report
}

#[async_trait]
impl McpGateway for Gateways {
    async fn probe(&self, integration: &Integration) -> ProbeReport {
        match self.route(integration) {
            Route::Mcp(mcp) => mcp.probe(integration).await,
            Route::Tools(tools) => probe_tools(tools, integration).await,
        }
    }

    async fn discover(
        &self,
        integration: &Integration,
        user: &str,
        bypass_cache: bool,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError> {
        match self.route(integration) {
            Route::Mcp(mcp) => mcp.discover(integration, user, bypass_cache, timeout).await,
            Route::Tools(tools) => tools.discover(integration, timeout).await,
        }
    }

    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError> {
        match self.route(integration) {
            Route::Mcp(mcp) => mcp.call_tool(integration, scope, call, timeout).await,
            Route::Tools(tools) => tools.call_tool(integration, scope, call, timeout).await,
        }
    }

    async fn read_resource(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        uri: &str,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<ReadResourceResult>, CallError> {
        match self.route(integration) {
            Route::Mcp(mcp) => {
                mcp.read_resource(integration, scope, uri, answers, timeout)
                    .await
            }
            Route::Tools(tools) => Err(no_such(tools, "resources")),
        }
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
        match self.route(integration) {
            Route::Mcp(mcp) => {
                mcp.get_prompt(integration, scope, name, arguments, answers, timeout)
                    .await
            }
            Route::Tools(tools) => Err(no_such(tools, "prompts")),
        }
    }

    async fn session_request(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        request: SessionRequest,
        timeout: Duration,
    ) -> Result<Option<CompleteResult>, CallError> {
        match self.route(integration) {
            Route::Mcp(mcp) => {
                mcp.session_request(integration, scope, request, timeout)
                    .await
            }
            Route::Tools(tools) => Err(no_such(tools, "sessions")),
        }
    }

    async fn forget(&self, integration: IntegrationId) {
        self.mcp.forget(integration).await;
        self.openapi.forget(integration).await;
        self.grpc.forget(integration).await;
    }
}
