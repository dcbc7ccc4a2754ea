//! MCP's typed answers (tools, resources, content blocks, results) to the
//! `switchboard.mcp.v1` messages, kept typed rather than flattened.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use rmcp::model::{
    CallToolResult, ConstString as _, ContentBlock, CreateMessageRequestMethod,
    ElicitationCreateRequestMethod, InputRequest, ListRootsRequestMethod, Prompt, Resource,
    ResourceContents, ResourceTemplate, Role, Tool,
};
use serde_json::{Map, Value};
use switchboard_proto::{json::map_to_struct, mcp::v1 as pb};

use crate::domain::{
    calls::{PromptAnswer, ToolAnswer},
    guardrails::Finding,
    outcome::{InputRequired, Outcome, reports_error},
    ports::{CallError, Discovery},
    resource::{ResourceKind, ResourceRead},
};

fn tool(tool: &Tool) -> pb::Tool {
    let annotations = tool.annotations.as_ref().map(|a| pb::ToolAnnotations {
        title: a.title.clone().unwrap_or_default(),
        read_only_hint: a.read_only_hint,
        destructive_hint: a.destructive_hint,
        idempotent_hint: a.idempotent_hint,
        open_world_hint: a.open_world_hint,
    });
    pb::Tool {
        name: tool.name.to_string(),
        title: tool.title.clone().unwrap_or_default(),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        input_schema: Some(map_to_struct(&tool.input_schema)),
        output_schema: tool.output_schema.as_deref().map(map_to_struct),
        annotations,
    }
}

fn resource(resource: &Resource) -> pb::Resource {
    pb::Resource {
        uri: resource.uri.clone(),
        name: resource.name.clone(),
        title: resource.title.clone().unwrap_or_default(),
        description: resource.description.clone().unwrap_or_default(),
        mime_type: resource.mime_type.clone().unwrap_or_default(),
        size: resource.size.and_then(|size| i64::try_from(size).ok()),
    }
}

fn resource_template(template: &ResourceTemplate) -> pb::ResourceTemplate {
    pb::ResourceTemplate {
        uri_template: template.uri_template.clone(),
        name: template.name.clone(),
        title: template.title.clone().unwrap_or_default(),
        description: template.description.clone().unwrap_or_default(),
        mime_type: template.mime_type.clone().unwrap_or_default(),
    }
}

fn prompt(prompt: &Prompt) -> pb::Prompt {
    let arguments = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| pb::PromptArgument {
            name: a.name.clone(),
            title: a.title.clone().unwrap_or_default(),
            description: a.description.clone().unwrap_or_default(),
            required: a.required.unwrap_or(false),
        })
        .collect();
    pb::Prompt {
        name: prompt.name.clone(),
        title: prompt.title.clone().unwrap_or_default(),
        description: prompt.description.clone().unwrap_or_default(),
        arguments,
    }
}

/// A discovery as the Discover response.
pub(crate) fn discovery(discovery: &Discovery) -> pb::DiscoverResponse {
    let server = &discovery.server;
    pb::DiscoverResponse {
        server: Some(pb::ServerInfo {
            name: server.name.clone(),
            title: server.title.clone().unwrap_or_default(),
            version: server.version.clone(),
            protocol_version: server.protocol_version.clone(),
            instructions: server.instructions.clone().unwrap_or_default(),
        }),
        tools: discovery.tools.iter().map(tool).collect(),
        resources: discovery.resources.iter().map(resource).collect(),
        resource_templates: discovery
            .resource_templates
            .iter()
            .map(resource_template)
            .collect(),
        prompts: discovery.prompts.iter().map(prompt).collect(),
        discover_time: Some(switchboard_server::paging::timestamp(
            discovery.discovered_at,
        )),
        integration: None,
    }
}

fn resource_contents(contents: &ResourceContents) -> pb::ResourceContents {
    use pb::resource_contents::Content;
    let (uri, mime_type, content) = match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => (uri, mime_type, Some(Content::Text(text.clone()))),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => (uri, mime_type, Some(Content::Blob(decoded(blob)))),
        #[allow(unreachable_patterns)]
        _ => return pb::ResourceContents::default(),
    };
    pb::ResourceContents {
        uri: uri.clone(),
        mime_type: mime_type.clone().unwrap_or_default(),
        content,
    }
}

fn decoded(base64: &str) -> Vec<u8> {
    // Servers send base64; undecodable data is passed on empty rather than
    // failing the whole result.
    STANDARD.decode(base64).unwrap_or_default()
}

fn content_block(block: &ContentBlock) -> Option<pb::ContentBlock> {
    use pb::content_block::Block;
    let block = match block {
        ContentBlock::Text(text) => Block::Text(pb::TextContent {
            text: text.text.clone(),
        }),
        ContentBlock::Image(image) => Block::Image(pb::ImageContent {
            data: decoded(&image.data),
            mime_type: image.mime_type.clone(),
        }),
        ContentBlock::Audio(audio) => Block::Audio(pb::AudioContent {
            data: decoded(&audio.data),
            mime_type: audio.mime_type.clone(),
        }),
        ContentBlock::Resource(embedded) => Block::Resource(pb::EmbeddedResource {
            resource: Some(resource_contents(&embedded.resource)),
        }),
        ContentBlock::ResourceLink(link) => Block::ResourceLink(pb::ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
            title: link.title.clone().unwrap_or_default(),
            description: link.description.clone().unwrap_or_default(),
            mime_type: link.mime_type.clone().unwrap_or_default(),
            size: link.size.and_then(|size| i64::try_from(size).ok()),
        }),
        _ => return None,
    };
    Some(pb::ContentBlock { block: Some(block) })
}

/// A `CallToolResult` as the ExecuteTool response; a failed call as an error
/// result with its typed reason and the facts a caller words it from.
pub(crate) fn tool_result(
    outcome: Result<ToolAnswer, CallError>,
    tool: &str,
) -> pb::ExecuteToolResponse {
    match outcome {
        Ok(answer) => {
            let mut response = match answer.value {
                Outcome::Complete(result) => call_result(result, tool),
                Outcome::InputRequired(asked) => input_required(&asked, tool),
            };
            response.guardrail_findings = guardrail_findings(&answer.findings);
            response
        }
        Err(error) => failed_call(error, tool),
    }
}

/// A call that produced no result: its reason, its facts, and its
/// description in `error_message` for people and for callers older than the
/// facts.
fn failed_call(error: CallError, tool: &str) -> pb::ExecuteToolResponse {
    let error_message = match &error {
        CallError::Timeout(limit) => format!(
            "the tool `{tool}` did not answer within {}s and was cancelled",
            limit.as_secs_f64()
        ),
        other => other.to_string(),
    };
    let mut response = pb::ExecuteToolResponse {
        is_error: true,
        error_message,
        failure_reason: failure_reason(&error).into(),
        ..Default::default()
    };
    add_facts(&mut response, error);
    response
}

/// The facts of a failure, each in the field its reason documents: numbers
/// as numbers, and the words of the layer below as it wrote them, never
/// wrapped in a sentence of mcp-service's.
fn add_facts(response: &mut pb::ExecuteToolResponse, error: CallError) {
    match error {
        CallError::Timeout(limit) => response.timeout = Some(duration(limit)),
        CallError::TooLarge { limit } => {
            response.result_limit_bytes = u64::try_from(limit).ok();
        }
        CallError::Connect(detail)
        | CallError::Transport(detail)
        | CallError::ExchangeRefused(detail)
        | CallError::ListingTooLong(detail) => response.detail = Some(detail),
        CallError::Upstream { code, message } => {
            response.jsonrpc_error = Some(pb::JsonRpcError { code, message });
        }
        CallError::Exhausted {
            message,
            retry_after,
        } => {
            response.detail = Some(message);
            response.retry_after = Some(duration(retry_after));
        }
        // The server's challenge is mcp-service's to act on, not a caller's
        // to word.
        CallError::AuthorizationRequired(_) => {}
    }
}

/// A time limit as the contract's `Duration`, exactly (whole nanoseconds).
fn duration(limit: std::time::Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(limit.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(limit.subsec_nanos()).unwrap_or(0),
    }
}

fn call_result(result: CallToolResult, tool: &str) -> pb::ExecuteToolResponse {
    let is_error = reports_error(&result);
    let structured = result.structured_content.as_ref();
    let structured_content = structured.map(|structured| match structured {
        Value::Object(map) => map_to_struct(map),
        // The contract carries an object; other JSON is wrapped.
        other => map_to_struct(&Map::from_iter([("result".to_owned(), other.clone())])),
    });
    let error_message = if is_error {
        let texts: Vec<&str> = result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        if texts.is_empty() {
            format!("the tool `{tool}` reported an error")
        } else {
            texts.join("\n")
        }
    } else {
        String::new()
    };
    pb::ExecuteToolResponse {
        is_error,
        content: result.content.iter().filter_map(content_block).collect(),
        structured_content,
        error_message,
        failure_reason: if is_error {
            pb::ToolFailureReason::ToolError.into()
        } else {
            pb::ToolFailureReason::Unspecified.into()
        },
        structured_content_json: structured.map(Value::to_string).unwrap_or_default(),
        input_required: None,
        timeout: None,
        approval: None,
        result_limit_bytes: None,
        detail: None,
        jsonrpc_error: None,
        retry_after: None,
        guardrail_findings: Vec::new(),
    }
}

/// What the guardrails found in a call, as the contract carries it.
fn guardrail_findings(findings: &[Finding]) -> Vec<pb::GuardrailFinding> {
    findings
        .iter()
        .map(|f| pb::GuardrailFinding {
            detector: f.detector.clone(),
            action: f.action.name().to_owned(),
            place: f.place.name().to_owned(),
            count: f.count,
        })
        .collect()
}

/// What a server asks the caller, as the contract's `InputRequired`: each
/// request's method and its params as the protocol writes them.
fn asked(asked: &InputRequired) -> pb::InputRequired {
    let requests = asked
        .requests
        .iter()
        .map(|(key, request)| {
            let (method, params_json) = request_wire(request);
            pb::InputRequest {
                key: key.clone(),
                method: method.to_owned(),
                params_json,
            }
        })
        .collect();
    pb::InputRequired {
        requests,
        request_state: asked.request_state.clone(),
        task_id: asked.task_id.clone(),
    }
}

/// A request's method and its params' JSON text (empty when it has none).
fn request_wire(request: &InputRequest) -> (&'static str, String) {
    let json = |params: Result<String, serde_json::Error>| params.unwrap_or_default();
    match request {
        InputRequest::Elicitation(request) => (
            ElicitationCreateRequestMethod::VALUE,
            json(serde_json::to_string(&request.params)),
        ),
        InputRequest::CreateMessage(request) => (
            CreateMessageRequestMethod::VALUE,
            json(serde_json::to_string(&request.params)),
        ),
        InputRequest::ListRoots(_) => (ListRootsRequestMethod::VALUE, String::new()),
        // A request of a later protocol: passed on whole, as the protocol
        // writes it, for the caller to recognize or refuse.
        other => ("", json(serde_json::to_string(other))),
    }
}

/// Input the caller is to answer, as an error result with its reason: a
/// caller that does not know the reason tells the model the tool could not
/// finish, with the server's questions in the message.
fn input_required(input: &InputRequired, tool: &str) -> pb::ExecuteToolResponse {
    let questions: Vec<&str> = input.questions().collect();
    let error_message = if questions.is_empty() {
        format!("the tool `{tool}` needs input before it can finish")
    } else {
        format!(
            "the tool `{tool}` needs input before it can finish: {}",
            questions.join("; ")
        )
    };
    pb::ExecuteToolResponse {
        is_error: true,
        error_message,
        failure_reason: pb::ToolFailureReason::InputRequired.into(),
        input_required: Some(asked(input)),
        ..Default::default()
    }
}

/// The contract's reason for a call that produced no result.
fn failure_reason(error: &CallError) -> pb::ToolFailureReason {
    use pb::ToolFailureReason as Reason;
    match error {
        CallError::Connect(_) => Reason::ServerUnreachable,
        CallError::Exhausted { .. } => Reason::LimitReached,
        CallError::Transport(_) => Reason::ConnectionLost,
        CallError::Timeout(_) => Reason::Timeout,
        CallError::TooLarge { .. } => Reason::ResultTooLarge,
        CallError::Upstream { .. } | CallError::ListingTooLong(_) => Reason::ProtocolError,
        CallError::AuthorizationRequired(_) | CallError::ExchangeRefused(_) => {
            Reason::AuthorizationRequired
        }
    }
}

/// A read resource as the RetrieveResource response.
pub(crate) fn resource_read(read: ResourceRead) -> pb::RetrieveResourceResponse {
    let ResourceRead {
        uri,
        result,
        kind,
        findings,
    } = read;
    let result = match result {
        Outcome::Complete(result) => result,
        Outcome::InputRequired(input) => {
            return pb::RetrieveResourceResponse {
                uri,
                input_required: Some(asked(&input)),
                ..Default::default()
            };
        }
    };
    let contents: Vec<pb::ResourceContents> =
        result.contents.iter().map(resource_contents).collect();
    let mime_type = contents
        .first()
        .map(|c| c.mime_type.clone())
        .unwrap_or_default();
    let kind = match kind {
        ResourceKind::Csv => pb::ResourceKind::Csv,
        ResourceKind::Text => pb::ResourceKind::Text,
        ResourceKind::Binary => pb::ResourceKind::Binary,
    };
    pb::RetrieveResourceResponse {
        uri,
        contents,
        kind: kind.into(),
        mime_type,
        input_required: None,
        guardrail_findings: guardrail_findings(&findings),
    }
}

/// A rendered prompt (or the input asked first) as the GetPrompt response.
pub(crate) fn prompt_result(answer: &PromptAnswer) -> pb::GetPromptResponse {
    let result = match &answer.value {
        Outcome::Complete(result) => result,
        Outcome::InputRequired(input) => {
            return pb::GetPromptResponse {
                input_required: Some(asked(input)),
                ..Default::default()
            };
        }
    };
    let messages = result
        .messages
        .iter()
        .map(|message| pb::PromptMessage {
            role: match message.role {
                Role::Assistant => pb::Role::Assistant,
                Role::User => pb::Role::User,
            }
            .into(),
            content: content_block(&message.content),
        })
        .collect();
    pb::GetPromptResponse {
        description: result.description.clone().unwrap_or_default(),
        messages,
        input_required: None,
        guardrail_findings: guardrail_findings(&answer.findings),
    }
}
