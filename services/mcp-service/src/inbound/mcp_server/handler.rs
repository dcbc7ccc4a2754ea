//! [`SurfaceServer`]: the MCP server an MCP client talks to, each request
//! answered from the caller's surface through the same calls as the gRPC
//! handlers (organization, policy, limits and audit included).

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::join_all;
#[expect(
    deprecated,
    reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
)]
use rmcp::model::SetLevelRequestParams;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams,
        CompleteResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
        UnsubscribeRequestParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use tokio_util::sync::DropGuard;
use tracing::Instrument as _;

use super::{
    admission::{Admission, Method},
    caller::{Caller, caller_of, notifier_of},
    errors::{error_data, unknown},
    findings, listing,
    passthrough::{self, Ear},
    session_requests::{SessionRequests, completion_owner, every_member, resource_owner},
};
use crate::domain::{
    abilities::AbilitiesGuard,
    audit::calls::AuditedCalls,
    bounds::{PromptName, ResourceUri, ToolName},
    calls::{Grants, PromptCall, ResourceQuery, ToolAnswer},
    downstream::Downstream,
    outcome::Outcome,
    policy::enforce::AllowList,
    ports::{Discovery, SessionRequest, ToolCall},
    surface::Member,
};

/// What the endpoint tells clients about itself.
const INSTRUCTIONS: &str = "Switchboard: the tools, resources and prompts of your organization's \
     MCP integrations, under its policies.";

/// The MCP server of the endpoint; one per client session (initialize era)
/// or request (stateless era), holding nothing of the caller: each request
/// brings its own [`Caller`]. A session's server also passes the list
/// changes its caller may hear, and the notices of its upstream sessions,
/// on while it lives.
#[derive(Debug, Clone)]
pub(crate) struct SurfaceServer {
    calls: AuditedCalls,
    downstream: Downstream,
    passing: Arc<Mutex<Vec<DropGuard>>>,
    declared: Arc<Mutex<Option<AbilitiesGuard>>>,
    admission: Admission,
}

impl SurfaceServer {
    /// A server calling through `calls`, requests admitted by `admission`,
    /// passing on what servers send through `downstream`.
    pub(crate) fn new(calls: AuditedCalls, downstream: Downstream, admission: Admission) -> Self {
        Self {
            calls,
            downstream,
            passing: Arc::default(),
            declared: Arc::default(),
            admission,
        }
    }

    /// A server for a new session: the same calls and limits, none of
    /// another session's state.
    pub(crate) fn for_session(&self) -> Self {
        Self::new(
            self.calls.clone(),
            self.downstream.clone(),
            self.admission.clone(),
        )
    }

    /// What passes the requests of a client session on to its upstream
    /// sessions.
    fn session_requests(&self) -> SessionRequests<'_> {
        SessionRequests {
            calls: &self.calls,
            admission: &self.admission,
        }
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
    #[expect(
        deprecated,
        reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
    )]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_completions()
                .enable_logging()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "switchboard",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A session's client hears of its surface's list changes for as
        // long as the session lives.
        let Ok(caller) = notifier_of(&context) else {
            return;
        };
        // Its upstream sessions declare to their servers what it declared.
        let declared = passthrough::declare_abilities(&self.downstream, &caller, &context.peer);
        *self.declared.lock().unwrap_or_else(PoisonError::into_inner) = declared;
        let notices = passthrough::spawn_session_notices(
            &self.downstream.notices,
            &caller,
            context.peer.clone(),
        );
        let changes = passthrough::spawn_session_changes(
            self.downstream.changes.clone(),
            caller,
            context.peer,
        );
        self.passing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend([notices, changes]);
    }

    #[expect(
        deprecated,
        reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
    )]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The level as the protocol spells it, for every member's server.
        let level = serde_json::to_value(request.level)
            .ok()
            .and_then(|level| level.as_str().map(str::to_owned))
            .ok_or_else(|| ErrorData::invalid_params("an unknown logging level", None))?;
        let request = SessionRequest::SetLevel(level);
        self.session_requests()
            .on_sessions(&context, Method::SetLevel, |caller| {
                every_member(caller, &request)
            })
            .await
            .map(drop)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = ResourceUri::parse("uri", request.uri).map_err(|v| error_data(v.into()))?;
        let subscribe = SessionRequest::Subscribe(uri.clone());
        self.session_requests()
            .on_sessions(&context, Method::Subscribe, |caller| {
                resource_owner(caller, &uri, subscribe)
            })
            .await
            .map(drop)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = ResourceUri::parse("uri", request.uri).map_err(|v| error_data(v.into()))?;
        let unsubscribe = SessionRequest::Unsubscribe(uri.clone());
        self.session_requests()
            .on_sessions(&context, Method::Unsubscribe, |caller| {
                resource_owner(caller, &uri, unsubscribe)
            })
            .await
            .map(drop)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let answer = self
            .session_requests()
            .on_sessions(&context, Method::Complete, |caller| {
                completion_owner(caller, request)
            })
            .await?;
        answer
            .ok_or_else(|| ErrorData::internal_error("no MCP server answered the completion", None))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(passthrough::listen_filter(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let caller = caller_of(context.request_context())?;
        let ear = Ear::Listen(context.sink().clone());
        tokio::select! {
            () = passthrough::pass_changes(&self.downstream.changes, &caller, ear) => {}
            () = context.cancelled() => {}
        }
        Ok(())
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
        let name = ToolName::parse("name", request.name).map_err(|v| error_data(v.into()))?;
        let span = caller.span("tools/call", Some(&name));
        let answer = async {
            let (member, own) = caller
                .surface
                .route_tool(&name)
                .ok_or_else(|| unknown("tool", &name))?;
            let (_line, relay, progress) = passthrough::relay(&self.downstream, &caller, &context);
            let call = ToolCall {
                name: ToolName::parse("name", own).map_err(|v| error_data(v.into()))?,
                arguments: request.arguments.clone().unwrap_or_default(),
                answers: Default::default(),
                task_id: None,
                progress,
            };
            let grants = Grants {
                allowed: &AllowList::any(),
                approval_id: None,
            };
            let calling = self.calls.execute_tool(
                &caller.principal,
                member.integration,
                call,
                &caller.session_scope,
                grants,
                None,
            );
            let outcome = passthrough::relaying(calling, relay, &context.peer)
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
        let uri = ResourceUri::parse("uri", request.uri).map_err(|v| error_data(v.into()))?;
        let span = caller.span("resources/read", Some(&uri));
        let answer = async {
            let member = caller
                .surface
                .resource_member(&uri)
                .ok_or_else(|| unknown("resource", &uri))?;
            let parameters = serde_json::Map::new();
            let query = ResourceQuery {
                uri: &uri,
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
            let findings = read.findings;
            let mut read = listing::complete(read.result)?;
            listing::said_complete(&mut read.result_type);
            findings::attach(&mut read.meta, &findings);
            Ok(ReadResourceResponse::Complete(read))
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
        let name = PromptName::parse("name", request.name).map_err(|v| error_data(v.into()))?;
        let span = caller.span("prompts/get", Some(&name));
        let answer = async {
            let (member, own) = caller
                .surface
                .route(&name)
                .ok_or_else(|| unknown("prompt", &name))?;
            let prompt = PromptCall {
                name: PromptName::parse("name", own).map_err(|v| error_data(v.into()))?,
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
            let mut prompt = listing::complete(result.value)?;
            listing::said_complete(&mut prompt.result_type);
            findings::attach(&mut prompt.meta, &result.findings);
            Ok(GetPromptResponse::Complete(prompt))
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
fn tool_result(outcome: Result<ToolAnswer, crate::domain::ports::CallError>) -> CallToolResult {
    let answer = match outcome {
        Ok(answer) => answer,
        Err(error) => return CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    };
    let mut result = match answer.value {
        Outcome::InputRequired(_) => CallToolResult::error(vec![ContentBlock::text(
            "the tool asked for input, which this endpoint does not pass on yet",
        )]),
        Outcome::Complete(mut result) => {
            listing::said_complete(&mut result.result_type);
            result
        }
    };
    findings::attach(&mut result.meta, &answer.findings);
    result
}
