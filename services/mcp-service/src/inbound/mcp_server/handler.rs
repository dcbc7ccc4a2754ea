//! [`SurfaceServer`]: the MCP server an MCP client talks to, each request
//! answered from the caller's surface through the same calls as the gRPC
//! handlers (organization, policy, limits and audit included).

use std::sync::Arc;

use futures::future::join_all;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};
use serde_json::Value;
use tracing::Instrument as _;

use super::{
    admission::{Admission, Method},
    caller::{Caller, caller_of},
    errors::{error_data, unknown},
    listing,
};
use crate::domain::{
    audit::calls::AuditedCalls,
    calls::{Grants, PromptCall, ResourceQuery},
    policy::enforce::AllowList,
    ports::{Discovery, ToolCall},
    surface::Member,
};

/// What the endpoint tells clients about itself.
const INSTRUCTIONS: &str = "Switchboard: the tools, resources and prompts of your organization's \
     MCP integrations, under its policies.";

/// The MCP server of the endpoint; one per client session (initialize era)
/// or request (stateless era), holding nothing of the caller: each request
/// brings its own [`Caller`].
#[derive(Debug, Clone)]
pub(crate) struct SurfaceServer {
    calls: AuditedCalls,
    admission: Admission,
}

impl SurfaceServer {
    /// A server calling through `calls`, requests admitted by `admission`.
    pub(crate) fn new(calls: AuditedCalls, admission: Admission) -> Self {
        Self { calls, admission }
    }

    /// What each member of the caller's surface offers the caller (policies
    /// applied). A member that fails is skipped when others answer; when
    /// none answers, the first failure is the answer.
    async fn discover_all(
        &self,
        caller: &Caller,
    ) -> Result<Vec<(Member, Arc<Discovery>)>, ErrorData> {
        let any = AllowList::any();
        let members = caller.surface.members();
        let listings = join_all(members.iter().map(|member| {
            self.calls
                .discover(&caller.principal, member.integration, false, &any, None)
        }))
        .await;
        let mut found = Vec::with_capacity(members.len());
        let mut first_error = None;
        for (member, listing) in members.iter().zip(listings) {
            match listing {
                Ok((_, discovery)) => found.push((member.clone(), discovery)),
                Err(error) => {
                    tracing::warn!(integration_id = %member.integration, error = %error, "a member of the surface did not answer its listing");
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) if found.is_empty() => Err(error_data(error)),
            _ => Ok(found),
        }
    }
}

impl ServerHandler for SurfaceServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(
            "switchboard",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("tools/list", None);
        let answer = async {
            let listings = self.discover_all(&caller).await?;
            Ok(ListToolsResult::with_all_items(listing::tools(&listings)))
        };
        self.admission
            .serve(&caller, Method::ListTools, answer)
            .instrument(span)
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("tools/call", Some(&request.name));
        let answer = async {
            let (member, own) = caller
                .surface
                .route_tool(&request.name)
                .ok_or_else(|| unknown("tool", &request.name))?;
            let call = ToolCall {
                name: own.to_owned(),
                arguments: request.arguments.clone().unwrap_or_default(),
                answers: Default::default(),
                task_id: None,
            };
            let grants = Grants {
                allowed: &AllowList::any(),
                approval_id: None,
            };
            let outcome = self
                .calls
                .execute_tool(
                    &caller.principal,
                    member.integration,
                    call,
                    &caller.session_scope,
                    grants,
                    None,
                )
                .await
                .map_err(error_data)?;
            Ok(CallToolResponse::Complete(tool_result(outcome)))
        };
        self.admission
            .serve(&caller, Method::CallTool, answer)
            .instrument(span)
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("resources/list", None);
        let answer = async {
            let listings = self.discover_all(&caller).await?;
            Ok(ListResourcesResult::with_all_items(listing::resources(
                &listings,
            )))
        };
        self.admission
            .serve(&caller, Method::ListResources, answer)
            .instrument(span)
            .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("resources/templates/list", None);
        let answer = async {
            let listings = self.discover_all(&caller).await?;
            Ok(ListResourceTemplatesResult::with_all_items(
                listing::resource_templates(&listings),
            ))
        };
        self.admission
            .serve(&caller, Method::ListResourceTemplates, answer)
            .instrument(span)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("resources/read", Some(&request.uri));
        let answer = async {
            let member = caller
                .surface
                .resource_member(&request.uri)
                .ok_or_else(|| unknown("resource", &request.uri))?;
            let parameters = serde_json::Map::new();
            let query = ResourceQuery {
                uri: &request.uri,
                parameters: &parameters,
                answers: Default::default(),
            };
            let read = self
                .calls
                .read_resource(
                    &caller.principal,
                    member.integration,
                    query,
                    &caller.session_scope,
                    None,
                )
                .await
                .map_err(error_data)?;
            listing::complete(read.result).map(ReadResourceResponse::Complete)
        };
        self.admission
            .serve(&caller, Method::ReadResource, answer)
            .instrument(span)
            .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("prompts/list", None);
        let answer = async {
            let listings = self.discover_all(&caller).await?;
            Ok(ListPromptsResult::with_all_items(listing::prompts(
                &listings,
            )))
        };
        self.admission
            .serve(&caller, Method::ListPrompts, answer)
            .instrument(span)
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let span = caller.span("prompts/get", Some(&request.name));
        let answer = async {
            let (member, own) = caller
                .surface
                .route(&request.name)
                .ok_or_else(|| unknown("prompt", &request.name))?;
            let prompt = PromptCall {
                name: own.to_owned(),
                arguments: request.arguments.clone().unwrap_or_default(),
                answers: Default::default(),
            };
            let result = self
                .calls
                .get_prompt(
                    &caller.principal,
                    member.integration,
                    prompt,
                    &caller.session_scope,
                    None,
                )
                .await
                .map_err(error_data)?;
            listing::complete(result).map(GetPromptResponse::Complete)
        };
        self.admission
            .serve(&caller, Method::GetPrompt, answer)
            .instrument(span)
            .await
    }
}

/// A tool call's outcome as the client's result: the server's result as it
/// sent it, or what went wrong on the server's side as an error result for
/// the model to read, as ExecuteTool words it.
fn tool_result(outcome: Result<Value, crate::domain::ports::CallError>) -> CallToolResult {
    match outcome {
        Ok(value) if listing::is_input_required(&value) => {
            CallToolResult::error(vec![ContentBlock::text(
                "the tool asked for input, which this endpoint does not pass on yet",
            )])
        }
        Ok(value) => serde_json::from_value(listing::completed(value)).unwrap_or_else(|error| {
            CallToolResult::error(vec![ContentBlock::text(format!(
                "the MCP server's result could not be read: {error}"
            ))])
        }),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}
