//! The `switchboard.mcp.v1.McpService` handlers: proto in, domain call,
//! proto out.

use serde_json::{Map, Value};
use switchboard_auth::{Principal, principal};
use switchboard_proto::mcp::v1::{self as pb, mcp_service_server::McpService};
use switchboard_server::{Idempotency, fingerprint, parse_request_id};
use tonic::{Request, Response, Status};

use super::{
    convert::{
        Violations, auth_input, decode_page_token, encode_page_token, page_size,
        predefined_secrets, proto_catalog_entry, proto_integration, proto_validation, timeouts,
        transport_input,
    },
    error::status,
    wire,
};
use crate::domain::{
    calls::CallService,
    error::McpError,
    input::{IntegrationPatch, NewIntegration, Source},
    integration::{DisplayName, IntegrationId, Slug},
    ports::ListQuery,
    service::IntegrationService,
};

/// The mcp-service API.
#[derive(Debug, Clone)]
pub(crate) struct McpApi {
    integrations: IntegrationService,
    calls: CallService,
    idempotency: Idempotency,
}

impl McpApi {
    pub(crate) fn new(
        integrations: IntegrationService,
        calls: CallService,
        idempotency: Idempotency,
    ) -> Self {
        Self {
            integrations,
            calls,
            idempotency,
        }
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn caller<T>(request: &Request<T>) -> Result<Principal, Status> {
    principal(request).cloned()
}

fn parse_id(field: &str, id: &str) -> Result<IntegrationId, Status> {
    IntegrationId::parse(field, id).map_err(|v| status(v.into()))
}

fn parse_new(request: pb::CreateIntegrationRequest) -> Result<NewIntegration, McpError> {
    let mut violations = Violations::default();
    let display_name = violations.take(DisplayName::parse("display_name", &request.display_name));
    let slug = violations.take(Slug::parse("slug", &request.slug));
    let source = match request.source {
        None => violations.take(Err(switchboard_server::FieldViolation::new(
            "source",
            "either custom or predefined is required",
        ))),
        Some(pb::create_integration_request::Source::Custom(custom)) => violations
            .take(transport_input("custom.transport", custom.transport))
            .map(|transport| Source::Custom {
                transport,
                auth: auth_input(custom.auth),
            }),
        Some(pb::create_integration_request::Source::Predefined(predefined)) => {
            if predefined.catalog_id.is_empty() {
                violations.take::<()>(Err(switchboard_server::FieldViolation::new(
                    "predefined.catalog_id",
                    "is required",
                )));
            }
            Some(Source::Predefined {
                catalog_id: predefined.catalog_id,
                secrets: predefined_secrets(predefined.secrets),
            })
        }
    };
    let timeouts = timeouts("timeouts", request.timeouts.as_ref(), &mut violations);
    violations.finish()?;
    match (display_name, slug, source) {
        (Some(display_name), Some(slug), Some(source)) => Ok(NewIntegration {
            display_name,
            slug,
            source,
            timeouts,
            enabled: !request.start_disabled,
        }),
        _ => Err(McpError::invalid("", "invalid request")),
    }
}

fn parse_patch(
    integration: pb::Integration,
    mask: Option<prost_types::FieldMask>,
) -> Result<IntegrationPatch, McpError> {
    let paths = mask.map(|m| m.paths).unwrap_or_default();
    if paths.is_empty() {
        return Err(McpError::invalid(
            "update_mask",
            "name at least one field to change",
        ));
    }
    let mut violations = Violations::default();
    let mut patch = IntegrationPatch::default();
    for path in paths {
        match path.as_str() {
            "display_name" => {
                patch.display_name = violations.take(DisplayName::parse(
                    "integration.display_name",
                    &integration.display_name,
                ));
            }
            "slug" => {
                patch.slug = violations.take(Slug::parse("integration.slug", &integration.slug));
            }
            "transport" => {
                patch.transport = violations.take(transport_input(
                    "integration.transport",
                    integration.transport.clone(),
                ));
            }
            "auth" => patch.auth = Some(auth_input(integration.auth.clone())),
            "timeouts" => {
                patch.timeouts = Some(timeouts(
                    "integration.timeouts",
                    integration.timeouts.as_ref(),
                    &mut violations,
                ));
            }
            other => violations.extend(vec![switchboard_server::FieldViolation::new(
                "update_mask",
                format!("`{other}` cannot be updated (display_name, slug, transport, auth, timeouts can)"),
            )]),
        }
    }
    violations.finish()?;
    Ok(patch)
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
        let new = parse_new(request).map_err(status)?;
        let create = || async {
            let integration = self
                .integrations
                .create(&caller, new)
                .await
                .map_err(status)?;
            Ok(pb::CreateIntegrationResponse {
                integration: Some(proto_integration(&integration)),
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
        let integration = self.integrations.get(&caller, id).await.map_err(status)?;
        Ok(Response::new(pb::GetIntegrationResponse {
            integration: Some(proto_integration(&integration)),
        }))
    }

    async fn list_integrations(
        &self,
        request: Request<pb::ListIntegrationsRequest>,
    ) -> Reply<pb::ListIntegrationsResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let mut violations = Violations::default();
        let limit = violations.take(page_size("page_size", request.page_size));
        let after = violations.take(decode_page_token("page_token", &request.page_token));
        violations.finish().map_err(status)?;
        let query = ListQuery {
            after: after.flatten(),
            limit: limit.unwrap_or_default(),
            enabled_only: request.enabled_only,
        };
        let page = self
            .integrations
            .list(&caller, query)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ListIntegrationsResponse {
            integrations: page.integrations.iter().map(proto_integration).collect(),
            next_page_token: encode_page_token(page.next),
        }))
    }

    async fn update_integration(
        &self,
        request: Request<pb::UpdateIntegrationRequest>,
    ) -> Reply<pb::UpdateIntegrationResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let integration = request
            .integration
            .ok_or_else(|| status(McpError::invalid("integration", "is required")))?;
        let id = parse_id("integration.id", &integration.id)?;
        let patch = parse_patch(integration, request.update_mask).map_err(status)?;
        let integration = self
            .integrations
            .update(&caller, id, patch)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::UpdateIntegrationResponse {
            integration: Some(proto_integration(&integration)),
        }))
    }

    async fn delete_integration(
        &self,
        request: Request<pb::DeleteIntegrationRequest>,
    ) -> Reply<pb::DeleteIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        self.integrations
            .delete(&caller, id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::DeleteIntegrationResponse {}))
    }

    async fn enable_integration(
        &self,
        request: Request<pb::EnableIntegrationRequest>,
    ) -> Reply<pb::EnableIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let integration = self
            .integrations
            .set_enabled(&caller, id, true)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::EnableIntegrationResponse {
            integration: Some(proto_integration(&integration)),
        }))
    }

    async fn disable_integration(
        &self,
        request: Request<pb::DisableIntegrationRequest>,
    ) -> Reply<pb::DisableIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let integration = self
            .integrations
            .set_enabled(&caller, id, false)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::DisableIntegrationResponse {
            integration: Some(proto_integration(&integration)),
        }))
    }

    async fn validate_integration(
        &self,
        request: Request<pb::ValidateIntegrationRequest>,
    ) -> Reply<pb::ValidateIntegrationResponse> {
        let caller = caller(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        let report = self
            .integrations
            .validate(&caller, id)
            .await
            .map_err(status)?;
        Ok(Response::new(proto_validation(report)))
    }

    async fn list_predefined_integrations(
        &self,
        request: Request<pb::ListPredefinedIntegrationsRequest>,
    ) -> Reply<pb::ListPredefinedIntegrationsResponse> {
        let _caller = caller(&request)?;
        let request = request.into_inner();
        let mut violations = Violations::default();
        let limit = violations.take(page_size("page_size", request.page_size));
        let offset = if request.page_token.is_empty() {
            Some(0)
        } else {
            violations.take(request.page_token.parse::<usize>().map_err(|_| {
                switchboard_server::FieldViolation::new(
                    "page_token",
                    "is not a page token this service issued",
                )
            }))
        };
        violations.finish().map_err(status)?;
        let (limit, offset) = (
            limit.unwrap_or_default() as usize,
            offset.unwrap_or_default(),
        );
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
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let id = parse_id("integration_id", &request.get_ref().integration_id)?;
        let (integration, discovery) = self
            .calls
            .discover(&caller, id, request.get_ref().bypass_cache, deadline)
            .await
            .map_err(status)?;
        let mut response = wire::discovery(&discovery);
        response.integration = Some(proto_integration(&integration));
        Ok(Response::new(response))
    }

    async fn execute_tool(
        &self,
        request: Request<pb::ExecuteToolRequest>,
    ) -> Reply<pb::ExecuteToolResponse> {
        let caller = caller(&request)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let request = request.into_inner();
        let id = parse_id("integration_id", &request.integration_id)?;
        if request.tool_name.is_empty() {
            return Err(status(McpError::invalid("tool_name", "is required")));
        }
        let arguments = tool_arguments(&request)?;
        let outcome = self
            .calls
            .execute_tool(
                &caller,
                id,
                &request.tool_name,
                arguments,
                &request.session_scope,
                deadline,
            )
            .await
            .map_err(status)?;
        Ok(Response::new(wire::tool_result(
            outcome,
            &request.tool_name,
        )))
    }

    async fn retrieve_resource(
        &self,
        request: Request<pb::RetrieveResourceRequest>,
    ) -> Reply<pb::RetrieveResourceResponse> {
        let caller = caller(&request)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let request = request.into_inner();
        let id = parse_id("integration_id", &request.integration_id)?;
        if request.uri.is_empty() {
            return Err(status(McpError::invalid("uri", "is required")));
        }
        let parameters = request
            .parameters
            .as_ref()
            .map(switchboard_proto::json::struct_to_map)
            .unwrap_or_default();
        let read = self
            .calls
            .read_resource(
                &caller,
                id,
                &request.uri,
                &parameters,
                &request.session_scope,
                deadline,
            )
            .await
            .map_err(status)?;
        Ok(Response::new(wire::resource_read(read.uri, &read.result)))
    }

    async fn get_prompt(
        &self,
        request: Request<pb::GetPromptRequest>,
    ) -> Reply<pb::GetPromptResponse> {
        let caller = caller(&request)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let request = request.into_inner();
        let id = parse_id("integration_id", &request.integration_id)?;
        if request.name.is_empty() {
            return Err(status(McpError::invalid("name", "is required")));
        }
        let arguments = request
            .arguments
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let result = self
            .calls
            .get_prompt(
                &caller,
                id,
                &request.name,
                arguments,
                &request.session_scope,
                deadline,
            )
            .await
            .map_err(status)?;
        Ok(Response::new(wire::prompt_result(&result)))
    }
}

/// The arguments of an ExecuteTool request: the exact JSON text when the
/// caller sends it, else the `Struct`.
fn tool_arguments(request: &pb::ExecuteToolRequest) -> Result<Map<String, Value>, Status> {
    if request.arguments_json.is_empty() {
        return Ok(request
            .arguments
            .as_ref()
            .map(switchboard_proto::json::struct_to_map)
            .unwrap_or_default());
    }
    serde_json::from_str(&request.arguments_json).map_err(|error| {
        status(McpError::invalid(
            "arguments_json",
            format!("is not a JSON object ({error})"),
        ))
    })
}
