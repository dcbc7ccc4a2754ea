//! The `switchboard.mcp.v1.McpService` handlers: proto in, domain call,
//! proto out.

use secrecy::SecretString;
use switchboard_auth::{Principal, bearer_token};
use switchboard_proto::mcp::v1::{self as pb, mcp_service_server::McpService};
use switchboard_server::principal;
use switchboard_server::{Idempotency, fingerprint, parse_request_id};
use tonic::{Request, Response, Status};

use super::{
    approvals::gated_response,
    convert::{encode_page_token, proto_catalog_entry, proto_integration, proto_validation},
    error::status,
    parse::{
        authorization_answer, catalog_page, input_answers, list_query, parse_id, parse_new,
        parse_update, prompt_arguments, prompt_target, resource_target, tool_call, tool_target,
    },
    policy::allow_list,
    resume::{Binding, Field, Operation, ResumeSeal},
    wire,
};
use crate::domain::{
    approvals::ApprovalError,
    audit::{calls::AuditedCalls, changes::IntegrationChanges},
    bounds::{PromptName, ResourceUri},
    caller_token::{CallerToken, with_caller_token},
    calls::{Grants, PromptCall, ResourceQuery},
    error::McpError,
};

/// The mcp-service API.
#[derive(Debug, Clone)]
pub(crate) struct McpApi {
    integrations: IntegrationChanges,
    calls: AuditedCalls,
    idempotency: Idempotency,
    resume: ResumeSeal,
}

impl McpApi {
    pub(crate) fn new(
        integrations: IntegrationChanges,
        calls: AuditedCalls,
        idempotency: Idempotency,
        resume: ResumeSeal,
    ) -> Self {
        Self {
            integrations,
            calls,
            idempotency,
            resume,
        }
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn caller<T>(request: &Request<T>) -> Result<Principal, Status> {
    principal(request).cloned()
}

/// The metadata key of a caller's token to exchange when it is not the
/// bearer token of the call.
const SUBJECT_TOKEN_KEY: &str = "x-switchboard-subject-token";

/// The caller's token an integration acting on their behalf exchanges:
/// the one in the `x-switchboard-subject-token` metadata, which must name
/// the caller (its `sub` is their user id), else the call's bearer token.
fn subject_token<T>(
    request: &Request<T>,
    caller: &Principal,
) -> Result<Option<CallerToken>, Status> {
    let Some(value) = request.metadata().get(SUBJECT_TOKEN_KEY) else {
        return Ok(bearer_token(request).map(|token| CallerToken::new(token.0)));
    };
    let text = value
        .to_str()
        .map_err(|_| status(McpError::Forbidden("the subject token is not text")))?;
    let token = CallerToken::new(std::sync::Arc::new(SecretString::from(
        text.trim().to_owned(),
    )));
    if token.subject().as_deref() != Some(caller.user_id.as_str()) {
        return Err(status(McpError::Forbidden(
            "the subject token does not name the caller (its sub claim is not the caller's user id)",
        )));
    }
    Ok(Some(token))
}

#[tonic::async_trait]
impl McpService for McpApi {
    async fn create_integration(
        &self,
        request: Request<pb::CreateIntegrationRequest>,
    ) -> Reply<pb::CreateIntegrationResponse> {
        let caller = caller(&request)?;
        let mut request = request.into_inner();
        let request_id = std::mem::take(&mut request.request_id);
        let request_id = parse_request_id(&request_id).map_err(|v| status(v.into()))?;
        let fingerprint = fingerprint(&caller.user_id, &request);
        let new = parse_new(request)?;
        let create = || async {
            let integration = self.integrations.create(&caller, new).await?;
            Ok(pb::CreateIntegrationResponse {
                integration: Some(proto_integration(&integration, &caller)),
            })
        };
        self.idempotency
            .once(
                &caller.org_id,
                "CreateIntegration",
                request_id,
                &fingerprint,
                create,
            )
            .await
            .map(Response::new)
    }

    async fn get_integration(
        &self,
        request: Request<pb::GetIntegrationRequest>,
    ) -> Reply<pb::GetIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let integration = self.integrations.get(&caller, id).await?;
        Ok(Response::new(pb::GetIntegrationResponse {
            integration: Some(proto_integration(&integration, &caller)),
        }))
    }

    async fn list_integrations(
        &self,
        request: Request<pb::ListIntegrationsRequest>,
    ) -> Reply<pb::ListIntegrationsResponse> {
        let caller = caller(&request)?;
        let query = list_query(request.get_ref())?;
        let page = self.integrations.list(&caller, query).await?;
        Ok(Response::new(pb::ListIntegrationsResponse {
            integrations: page
                .integrations
                .iter()
                .map(|integration| proto_integration(integration, &caller))
                .collect(),
            next_page_token: encode_page_token(page.next),
        }))
    }

    async fn update_integration(
        &self,
        request: Request<pb::UpdateIntegrationRequest>,
    ) -> Reply<pb::UpdateIntegrationResponse> {
        let caller = caller(&request)?;
        let (id, patch) = parse_update(request.into_inner())?;
        let integration = self.integrations.update(&caller, id, patch).await?;
        Ok(Response::new(pb::UpdateIntegrationResponse {
            integration: Some(proto_integration(&integration, &caller)),
        }))
    }

    async fn delete_integration(
        &self,
        request: Request<pb::DeleteIntegrationRequest>,
    ) -> Reply<pb::DeleteIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        self.integrations.delete(&caller, id).await?;
        Ok(Response::new(pb::DeleteIntegrationResponse {}))
    }

    async fn enable_integration(
        &self,
        request: Request<pb::EnableIntegrationRequest>,
    ) -> Reply<pb::EnableIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let integration = self.integrations.set_enabled(&caller, id, true).await?;
        Ok(Response::new(pb::EnableIntegrationResponse {
            integration: Some(proto_integration(&integration, &caller)),
        }))
    }

    async fn disable_integration(
        &self,
        request: Request<pb::DisableIntegrationRequest>,
    ) -> Reply<pb::DisableIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let integration = self.integrations.set_enabled(&caller, id, false).await?;
        Ok(Response::new(pb::DisableIntegrationResponse {
            integration: Some(proto_integration(&integration, &caller)),
        }))
    }

    async fn validate_integration(
        &self,
        request: Request<pb::ValidateIntegrationRequest>,
    ) -> Reply<pb::ValidateIntegrationResponse> {
        let caller = caller(&request)?;
        // An integration acting on behalf of callers is checked with the
        // validating caller's token exchanged (not kept: see `on_behalf_of`).
        let token = subject_token(&request, &caller)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let validating = self.integrations.validate(&caller, id);
        let report = with_caller_token(token, validating).await?;
        Ok(Response::new(proto_validation(report)))
    }

    async fn list_predefined_integrations(
        &self,
        request: Request<pb::ListPredefinedIntegrationsRequest>,
    ) -> Reply<pb::ListPredefinedIntegrationsResponse> {
        let _caller = caller(&request)?;
        let (limit, offset) = catalog_page(request.get_ref())?;
        let entries = &self.integrations.catalog().integrations;
        let page: Vec<_> = entries.iter().skip(offset).take(limit).collect();
        let next = offset + page.len();
        Ok(Response::new(pb::ListPredefinedIntegrationsResponse {
            integrations: page.into_iter().map(proto_catalog_entry).collect(),
            next_page_token: if next < entries.len() {
                next.to_string()
            } else {
                String::new()
            },
        }))
    }

    async fn discover(&self, request: Request<pb::DiscoverRequest>) -> Reply<pb::DiscoverResponse> {
        let caller = caller(&request)?;
        let token = subject_token(&request, &caller)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let id = parse_id("integration_id", &request.get_ref().integration_id)?;
        let allowed = allow_list(request.get_ref().allowed_tools.as_ref())?;
        let discovering = self.calls.discover(
            &caller,
            id,
            request.get_ref().bypass_cache,
            &allowed,
            deadline,
        );
        let (integration, discovery) = with_caller_token(token, discovering).await?;
        let mut response = wire::discovery(&discovery);
        response.integration = Some(proto_integration(&integration, &caller));
        Ok(Response::new(response))
    }

    async fn execute_tool(
        &self,
        request: Request<pb::ExecuteToolRequest>,
    ) -> Reply<pb::ExecuteToolResponse> {
        let caller = caller(&request)?;
        let token = subject_token(&request, &caller)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let mut request = request.into_inner();
        let id = tool_target(&request)?;
        self.resume.open_tool_request(&caller, id, &mut request)?;
        let call = tool_call(&request)?;
        let allowed = allow_list(request.allowed_tools.as_ref())?;
        let executing = self.calls.execute_tool(
            &caller,
            id,
            call,
            &request.session_scope,
            Grants {
                allowed: &allowed,
                approval_id: request.approval_id.as_deref(),
            },
            deadline,
        );
        let outcome = with_caller_token(token, executing).await;
        let outcome = match outcome {
            Err(McpError::Approval(ApprovalError::Pending(approval))) => {
                let reason = pb::ToolFailureReason::ApprovalRequired;
                return Ok(Response::new(gated_response(&approval, reason)));
            }
            Err(McpError::Approval(ApprovalError::Denied(approval))) => {
                let reason = pb::ToolFailureReason::ApprovalDenied;
                return Ok(Response::new(gated_response(&approval, reason)));
            }
            outcome => outcome?,
        };
        let mut response = wire::tool_result(outcome, &request.tool_name);
        let binding = Binding {
            caller: &caller,
            integration: id,
            scope: &request.session_scope,
            operation: Operation::Tool(&request.tool_name),
        };
        self.resume
            .seal_input_required(response.input_required.as_mut(), &binding)?;
        Ok(Response::new(response))
    }

    async fn retrieve_resource(
        &self,
        request: Request<pb::RetrieveResourceRequest>,
    ) -> Reply<pb::RetrieveResourceResponse> {
        let caller = caller(&request)?;
        let token = subject_token(&request, &caller)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let request = request.into_inner();
        let (id, parameters) = resource_target(&request)?;
        let binding = Binding {
            caller: &caller,
            integration: id,
            scope: &request.session_scope,
            operation: Operation::Resource(&request.uri),
        };
        let state = self.resume.open(
            Field::RequestState,
            request.request_state.as_ref(),
            &binding,
        )?;
        let uri = ResourceUri::parse("uri", request.uri.as_str()).map_err(|v| status(v.into()))?;
        let query = ResourceQuery {
            uri: &uri,
            parameters: &parameters,
            answers: input_answers(&request.input_responses, state.as_ref())?,
        };
        let reading =
            self.calls
                .read_resource(&caller, id, query, &request.session_scope, deadline);
        let read = with_caller_token(token, reading).await?;
        let mut response = wire::resource_read(read);
        self.resume
            .seal_input_required(response.input_required.as_mut(), &binding)?;
        Ok(Response::new(response))
    }

    async fn get_prompt(
        &self,
        request: Request<pb::GetPromptRequest>,
    ) -> Reply<pb::GetPromptResponse> {
        let caller = caller(&request)?;
        let token = subject_token(&request, &caller)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let request = request.into_inner();
        let id = prompt_target(&request)?;
        let arguments = prompt_arguments(&request)?;
        let name = request.name.clone();
        let binding = Binding {
            caller: &caller,
            integration: id,
            scope: &request.session_scope,
            operation: Operation::Prompt(&name),
        };
        let state = self.resume.open(
            Field::RequestState,
            request.request_state.as_ref(),
            &binding,
        )?;
        let prompt = PromptCall {
            answers: input_answers(&request.input_responses, state.as_ref())?,
            name: PromptName::parse("name", request.name).map_err(|v| status(v.into()))?,
            arguments,
        };
        let rendering =
            self.calls
                .get_prompt(&caller, id, prompt, &request.session_scope, deadline);
        let result = with_caller_token(token, rendering).await?;
        let mut response = wire::prompt_result(&result);
        self.resume
            .seal_input_required(response.input_required.as_mut(), &binding)?;
        Ok(Response::new(response))
    }

    async fn start_authorization(
        &self,
        request: Request<pb::StartAuthorizationRequest>,
    ) -> Reply<pb::StartAuthorizationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("integration_id", &request.get_ref().integration_id)?;
        let started = self.calls.start_authorization(&caller, id).await?;
        Ok(Response::new(pb::StartAuthorizationResponse {
            authorization_url: started.authorization_url,
            state: started.state,
        }))
    }

    async fn complete_authorization(
        &self,
        request: Request<pb::CompleteAuthorizationRequest>,
    ) -> Reply<pb::CompleteAuthorizationResponse> {
        let caller = caller(&request)?;
        let answer = authorization_answer(request.into_inner())?;
        let id = self.calls.complete_authorization(&caller, answer).await?;
        Ok(Response::new(pb::CompleteAuthorizationResponse {
            integration_id: id.to_string(),
        }))
    }
}
