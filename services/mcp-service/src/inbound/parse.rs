//! Requests as the domain's inputs: every part of a request is checked and
//! parsed here (ids, names within their bounds, pages, exact JSON), every
//! violation named, so that a handler only calls the domain.

use serde_json::{Map, Value};
use switchboard_proto::mcp::v1 as pb;
use switchboard_server::FieldViolation;
use tonic::Status;

use super::{
    convert::{
        Violations, auth_input, decode_page_token, page_size, predefined_secrets, timeouts,
        transport_input,
    },
    error::status,
};
use crate::domain::{
    bounds::{Bound, PROMPT_NAME, RESOURCE_URI, SESSION_SCOPE, TASK_ID, TOOL_NAME, ToolName},
    error::McpError,
    guardrails::{GuardrailSettings, SettingInput},
    input::{IntegrationPatch, NewIntegration, Source},
    integration::{DisplayName, IntegrationId, Slug},
    ports::{AuthorizationAnswer, InputAnswers, ListQuery, ToolCall},
};

/// An integration id a request names in `field`.
pub(super) fn parse_id(field: &str, id: &str) -> Result<IntegrationId, Status> {
    IntegrationId::parse(field, id).map_err(|v| status(v.into()))
}

pub(super) fn parse_new(request: pb::CreateIntegrationRequest) -> Result<NewIntegration, McpError> {
    let mut violations = Violations::default();
    let display_name = violations.take(DisplayName::parse("display_name", &request.display_name));
    let slug = violations.take(Slug::parse("slug", &request.slug));
    let source = match request.source {
        None => violations.take(Err(FieldViolation::new(
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
                violations.take::<()>(Err(FieldViolation::new(
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
    let guardrails = violations
        .take(guardrail_settings("guardrails", &request.guardrails))
        .unwrap_or_default();
    violations.finish()?;
    match (display_name, slug, source) {
        (Some(display_name), Some(slug), Some(source)) => Ok(NewIntegration {
            display_name,
            slug,
            source,
            timeouts,
            enabled: !request.start_disabled,
            guardrails,
        }),
        _ => Err(McpError::invalid("", "invalid request")),
    }
}

/// The integration an UpdateIntegration request names and the change it asks.
pub(super) fn parse_update(
    request: pb::UpdateIntegrationRequest,
) -> Result<(IntegrationId, IntegrationPatch), Status> {
    let integration = request
        .integration
        .ok_or_else(|| status(McpError::invalid("integration", "is required")))?;
    let id = parse_id("integration.id", &integration.id)?;
    let patch = parse_patch(integration, request.update_mask).map_err(status)?;
    Ok((id, patch))
}

/// The page a ListIntegrations request asks for.
pub(super) fn list_query(request: &pb::ListIntegrationsRequest) -> Result<ListQuery, McpError> {
    let mut violations = Violations::default();
    let limit = violations.take(page_size("page_size", request.page_size));
    let after = violations.take(decode_page_token("page_token", &request.page_token));
    violations.finish()?;
    Ok(ListQuery {
        after: after.flatten(),
        limit: limit.unwrap_or_default(),
        enabled_only: request.enabled_only,
    })
}

/// The page of the catalog a ListPredefinedIntegrations request asks for:
/// how many entries, from which one.
pub(super) fn catalog_page(
    request: &pb::ListPredefinedIntegrationsRequest,
) -> Result<(usize, usize), McpError> {
    let mut violations = Violations::default();
    let limit = violations.take(page_size("page_size", request.page_size));
    let offset = if request.page_token.is_empty() {
        Some(0)
    } else {
        violations.take(request.page_token.parse::<usize>().map_err(|_| {
            FieldViolation::new("page_token", "is not a page token this service issued")
        }))
    };
    violations.finish()?;
    Ok((
        limit.unwrap_or_default() as usize,
        offset.unwrap_or_default(),
    ))
}

/// The answer a CompleteAuthorization request carries: `state` and `code`
/// are required.
pub(super) fn authorization_answer(
    request: pb::CompleteAuthorizationRequest,
) -> Result<AuthorizationAnswer, McpError> {
    let mut violations = Vec::new();
    for (field, value) in [("state", &request.state), ("code", &request.code)] {
        if value.is_empty() {
            violations.push(FieldViolation::new(field, "is required"));
        }
    }
    if !violations.is_empty() {
        return Err(McpError::Invalid(violations));
    }
    Ok(AuthorizationAnswer {
        state: request.state,
        code: request.code,
        issuer: Some(request.iss).filter(|iss| !iss.is_empty()),
    })
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
            "guardrails" => {
                patch.guardrails = violations.take(guardrail_settings(
                    "integration.guardrails",
                    &integration.guardrails,
                ));
            }
            other => violations.extend(vec![FieldViolation::new(
                "update_mask",
                format!("`{other}` cannot be updated (display_name, slug, transport, auth, timeouts, guardrails can)"),
            )]),
        }
    }
    violations.finish()?;
    Ok(patch)
}

/// Guardrail settings as the contract carries them, checked.
pub(super) fn guardrail_settings(
    field: &str,
    settings: &[pb::GuardrailSetting],
) -> Result<GuardrailSettings, FieldViolation> {
    GuardrailSettings::parse(field, &setting_inputs(settings))
}

/// Guardrail settings as the contract carries them, before they are
/// checked.
pub(super) fn setting_inputs(settings: &[pb::GuardrailSetting]) -> Vec<SettingInput> {
    settings
        .iter()
        .map(|s| SettingInput {
            detector: s.detector.clone(),
            place: s.place.clone(),
            action: s.action.clone(),
        })
        .collect()
}

/// The integration an ExecuteTool request calls, after its tool name and
/// session scope are checked.
pub(super) fn tool_target(request: &pb::ExecuteToolRequest) -> Result<IntegrationId, Status> {
    call_target(
        &request.integration_id,
        ("tool_name", &request.tool_name, TOOL_NAME),
        &request.session_scope,
    )
}

/// The integration a call goes to, after what it names (a tool, a prompt, a
/// URI) and its session scope are checked against the domain's bounds,
/// before the request's resumption state is bound to them.
fn call_target(
    integration_id: &str,
    (field, named, bound): (&str, &str, Bound),
    session_scope: &str,
) -> Result<IntegrationId, Status> {
    let id = parse_id("integration_id", integration_id)?;
    bound.check(field, named).map_err(|v| status(v.into()))?;
    SESSION_SCOPE
        .check_optional("session_scope", session_scope)
        .map_err(|v| status(v.into()))?;
    Ok(id)
}

/// The integration a RetrieveResource request reads from and the values of
/// its template's variables, after its URI and session scope are checked.
pub(super) fn resource_target(
    request: &pb::RetrieveResourceRequest,
) -> Result<(IntegrationId, Map<String, Value>), Status> {
    let id = call_target(
        &request.integration_id,
        ("uri", &request.uri, RESOURCE_URI),
        &request.session_scope,
    )?;
    #[allow(deprecated)] // still honoured for callers that only know it
    let parameters = request.parameters.as_ref();
    let parameters = json_object("parameters_json", &request.parameters_json, parameters)?;
    Ok((id, parameters))
}

/// The integration a GetPrompt request renders from, after its name and
/// session scope are checked.
pub(super) fn prompt_target(request: &pb::GetPromptRequest) -> Result<IntegrationId, Status> {
    call_target(
        &request.integration_id,
        ("name", &request.name, PROMPT_NAME),
        &request.session_scope,
    )
}

/// The arguments of a GetPrompt request as the strings MCP prompts take:
/// from `arguments_json` when the caller sends it (a string as it is, any
/// other value as its exact JSON text), else from the `arguments` map.
pub(super) fn prompt_arguments(
    request: &pb::GetPromptRequest,
) -> Result<Map<String, Value>, Status> {
    if request.arguments_json.is_empty() {
        return Ok(request
            .arguments
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect());
    }
    let arguments = json_object("arguments_json", &request.arguments_json, None)?;
    Ok(arguments
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, Value::String(v))
        })
        .collect())
}

/// A JSON object a request carries: the exact JSON text in `field` when the
/// caller sends it, else the `Struct` of an older caller.
fn json_object(
    field: &str,
    json: &str,
    fallback: Option<&prost_types::Struct>,
) -> Result<Map<String, Value>, Status> {
    if json.is_empty() {
        return Ok(fallback
            .map(switchboard_proto::json::struct_to_map)
            .unwrap_or_default());
    }
    serde_json::from_str(json).map_err(|error| {
        status(McpError::invalid(
            field,
            format!("is not a JSON object ({error})"),
        ))
    })
}

/// The arguments of an ExecuteTool request: the exact JSON text when the
/// caller sends it, else the `Struct`.
pub(super) fn tool_arguments(
    request: &pb::ExecuteToolRequest,
) -> Result<Map<String, Value>, Status> {
    json_object(
        "arguments_json",
        &request.arguments_json,
        request.arguments.as_ref(),
    )
}

/// The tool call of an ExecuteTool request, with the caller's answers when
/// it resumes a multi-round-trip request.
pub(super) fn tool_call(request: &pb::ExecuteToolRequest) -> Result<ToolCall, Status> {
    Ok(ToolCall {
        name: ToolName::parse("tool_name", request.tool_name.as_str())
            .map_err(|v| status(v.into()))?,
        arguments: tool_arguments(request)?,
        answers: input_answers(&request.input_responses, request.request_state.as_ref())?,
        task_id: task_id(request)?,
        progress: None,
    })
}

/// The task a resumed call answers, when it answers one.
fn task_id(request: &pb::ExecuteToolRequest) -> Result<Option<String>, Status> {
    let Some(task_id) = &request.task_id else {
        return Ok(None);
    };
    let problem = if task_id.is_empty() {
        Some("is empty".to_owned())
    } else if task_id.len() > TASK_ID.max_bytes {
        Some(format!("is longer than {} bytes", TASK_ID.max_bytes))
    } else if request.request_state.is_some() {
        Some("is never sent with request_state: a task keeps its own state".to_owned())
    } else {
        None
    };
    match problem {
        Some(problem) => Err(status(McpError::invalid("task_id", problem))),
        None => Ok(Some(task_id.clone())),
    }
}

/// The caller's answers: each a JSON object under a non-empty key. What
/// they say is the server's to judge.
pub(super) fn input_answers(
    responses: &std::collections::HashMap<String, String>,
    request_state: Option<&String>,
) -> Result<InputAnswers, Status> {
    let mut answers = InputAnswers {
        request_state: request_state.cloned(),
        ..InputAnswers::default()
    };
    for (key, response) in responses {
        if key.is_empty() {
            return Err(status(McpError::invalid(
                "input_responses",
                "has an empty key",
            )));
        }
        let response: Map<String, Value> = serde_json::from_str(response).map_err(|error| {
            status(McpError::invalid(
                format!("input_responses[{key}]"),
                format!("is not a JSON object ({error})"),
            ))
        })?;
        answers
            .responses
            .insert(key.clone(), Value::Object(response));
    }
    Ok(answers)
}
