//! mcp-service's messages and statuses as the domain's types: the one place
//! runs-service reads them.

use serde_json::Value;
use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{self as pb, content_block::Block},
};
use switchboard_server::{ClientError, ErrorKind};
use tonic::{Code, Status};

use crate::domain::{
    entities::{InputRequest, InputRequired},
    ids::IntegrationId,
    ports::{
        Capabilities, Content, McpCallError, McpPrompt, McpPromptArgument, McpResource, McpTool,
        ToolFailure, ToolOutput,
    },
};

/// mcp-service's status as the domain's error: the one place its codes are
/// read, through the decoder that mirrors how the server encoded them.
pub(super) fn failure(status: &Status) -> McpCallError {
    let ClientError {
        code,
        kind,
        message,
    } = ClientError::from(status);
    match (code, kind) {
        (Code::DeadlineExceeded | Code::Cancelled, _) => McpCallError::Timeout,
        (Code::Unavailable, _) => McpCallError::Unavailable(message),
        (Code::ResourceExhausted, kind) => McpCallError::Exhausted {
            retry_after: kind.retry_after(),
            message,
        },
        (Code::NotFound, _) => McpCallError::NotFound(message),
        // Without a URL the caller cannot authorize it (an
        // organization-wide connection only an admin makes): an ordinary
        // refusal whose message says so.
        (
            Code::FailedPrecondition,
            ErrorKind::AuthorizationRequired {
                authorization_url: Some(url),
            },
        ) => McpCallError::AuthorizationRequired { url },
        (
            Code::FailedPrecondition
            | Code::PermissionDenied
            | Code::InvalidArgument
            | Code::Unauthenticated,
            _,
        ) => McpCallError::Refused(message),
        _ => McpCallError::Failed(message),
    }
}

fn schema(value: Option<&prost_types::Struct>) -> Value {
    value.map_or_else(
        || serde_json::json!({"type": "object", "properties": {}}),
        struct_to_json,
    )
}

fn resource_content(contents: Option<&pb::ResourceContents>) -> Content {
    let Some(contents) = contents else {
        return Content::Resource {
            uri: String::new(),
            mime_type: String::new(),
            text: None,
            blob_bytes: None,
        };
    };
    let (text, blob_bytes) = match &contents.content {
        Some(pb::resource_contents::Content::Text(text)) => (Some(text.clone()), None),
        Some(pb::resource_contents::Content::Blob(blob)) => (None, Some(blob.len())),
        None => (None, None),
    };
    Content::Resource {
        uri: contents.uri.clone(),
        mime_type: contents.mime_type.clone(),
        text,
        blob_bytes,
    }
}

/// A content block of the contract as the domain's; `None` for an empty one.
pub(super) fn content(block: &pb::ContentBlock) -> Option<Content> {
    Some(match block.block.as_ref()? {
        Block::Text(text) => Content::Text(text.text.clone()),
        Block::Image(image) => Content::Image {
            mime_type: image.mime_type.clone(),
            bytes: image.data.len(),
        },
        Block::Audio(audio) => Content::Audio {
            mime_type: audio.mime_type.clone(),
            bytes: audio.data.len(),
        },
        Block::Resource(resource) => resource_content(resource.resource.as_ref()),
        Block::ResourceLink(link) => Content::ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
        },
    })
}

fn failure_reason(reason: pb::ToolFailureReason) -> ToolFailure {
    use pb::ToolFailureReason as Reason;
    match reason {
        Reason::ToolError => ToolFailure::ToolError,
        Reason::Timeout => ToolFailure::Timeout,
        Reason::ResultTooLarge => ToolFailure::TooLarge,
        Reason::ServerUnreachable => ToolFailure::Unreachable,
        Reason::ConnectionLost => ToolFailure::ConnectionLost,
        Reason::ProtocolError => ToolFailure::Protocol,
        Reason::AuthorizationRequired => ToolFailure::AuthorizationRequired,
        Reason::InputRequired => ToolFailure::InputRequired,
        Reason::Unspecified => ToolFailure::Other,
    }
}

/// An ExecuteTool response as the domain's tool output: the structured
/// result in its exact JSON when mcp-service sends it (the `Struct` only from
/// an older one).
pub fn tool_output(response: pb::ExecuteToolResponse) -> ToolOutput {
    let failure = response
        .is_error
        .then(|| failure_reason(response.failure_reason()));
    let structured = if response.structured_content_json.is_empty() {
        response
            .structured_content
            .as_ref()
            .map(|s| struct_to_json(s).to_string())
    } else {
        Some(response.structured_content_json)
    };
    let input_required = response.input_required.map(|asked| InputRequired {
        requests: asked
            .requests
            .into_iter()
            .map(|r| InputRequest {
                key: r.key,
                method: r.method,
                params_json: r.params_json,
            })
            .collect(),
        request_state: asked.request_state,
        task_id: asked.task_id,
    });
    ToolOutput {
        failure,
        error_message: response.error_message,
        content: response.content.iter().filter_map(content).collect(),
        structured,
        input_required,
        timeout: response
            .timeout
            .and_then(|limit| std::time::Duration::try_from(limit).ok()),
    }
}

fn resource(uri: String, name: String, description: String, mime_type: String) -> McpResource {
    McpResource {
        uri,
        name,
        description,
        mime_type,
    }
}

fn prompt(prompt: pb::Prompt) -> McpPrompt {
    McpPrompt {
        name: prompt.name,
        description: prompt.description,
        arguments: prompt
            .arguments
            .into_iter()
            .map(|a| McpPromptArgument {
                name: a.name,
                description: a.description,
                required: a.required,
            })
            .collect(),
    }
}

/// A Discover response as what the integration offers.
pub(super) fn capabilities(
    integration_id: IntegrationId,
    response: pb::DiscoverResponse,
) -> Result<Capabilities, McpCallError> {
    let slug = response
        .integration
        .as_ref()
        .map(|i| i.slug.clone())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| McpCallError::Failed("mcp-service did not name the integration".into()))?;
    Ok(Capabilities {
        integration_id,
        slug,
        tools: response
            .tools
            .into_iter()
            .map(|t| McpTool {
                input_schema: schema(t.input_schema.as_ref()),
                name: t.name,
                description: t.description,
            })
            .collect(),
        resources: response
            .resources
            .into_iter()
            .map(|r| resource(r.uri, r.name, r.description, r.mime_type))
            .collect(),
        resource_templates: response
            .resource_templates
            .into_iter()
            .map(|r| resource(r.uri_template, r.name, r.description, r.mime_type))
            .collect(),
        prompts: response.prompts.into_iter().map(prompt).collect(),
    })
}
