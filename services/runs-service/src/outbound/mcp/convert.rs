//! mcp-service's messages as the domain's types: the one place runs-service
//! reads them (its statuses: `status.rs`).

use std::time::Duration;

use serde_json::Value;
use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{self as pb, content_block::Block},
};

use crate::domain::{
    entities::{ApprovalAsked, InputRequest, InputRequired},
    ids::IntegrationId,
    ports::{
        Capabilities, Content, FailureFacts, McpCallError, McpPrompt, McpPromptArgument,
        McpResource, McpTool, ToolFailure, ToolOutput,
    },
};

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

/// [`content`] of a block the caller gives up: a text block is moved, not
/// copied (a large result is one text block, and is not held twice).
fn into_content(block: pb::ContentBlock) -> Option<Content> {
    match block.block {
        Some(Block::Text(text)) => Some(Content::Text(text.text)),
        _ => content(&block),
    }
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
        Reason::LimitReached => ToolFailure::LimitReached,
        Reason::ApprovalRequired => ToolFailure::ApprovalRequired,
        Reason::ApprovalDenied => ToolFailure::ApprovalDenied,
        Reason::Unspecified => ToolFailure::Other,
    }
}

/// The facts that come with `failure`, each read only from the field its
/// reason documents; `None` when the reason has none or mcp-service sent
/// none (an older one), and then the model reads its description.
fn failure_facts(
    failure: ToolFailure,
    response: &mut pb::ExecuteToolResponse,
) -> Option<FailureFacts> {
    let duration = |limit: prost_types::Duration| Duration::try_from(limit).ok();
    Some(match failure {
        ToolFailure::Timeout => FailureFacts::Timeout(duration(response.timeout?)?),
        ToolFailure::TooLarge => FailureFacts::TooLarge {
            limit_bytes: usize::try_from(response.result_limit_bytes?).ok()?,
        },
        ToolFailure::Unreachable => FailureFacts::Unreachable {
            detail: response.detail.take()?,
        },
        ToolFailure::ConnectionLost => FailureFacts::ConnectionLost {
            detail: response.detail.take()?,
        },
        ToolFailure::Protocol => match response.jsonrpc_error.take() {
            Some(pb::JsonRpcError { code, message }) => FailureFacts::JsonRpc { code, message },
            None => FailureFacts::ListingBound {
                detail: response.detail.take()?,
            },
        },
        ToolFailure::LimitReached => FailureFacts::LimitReached {
            retry_after: duration(response.retry_after?)?,
            detail: response.detail.take()?,
        },
        ToolFailure::ToolError
        | ToolFailure::AuthorizationRequired
        | ToolFailure::InputRequired
        | ToolFailure::ApprovalRequired
        | ToolFailure::ApprovalDenied
        | ToolFailure::Other => return None,
    })
}

/// An ExecuteTool response as the domain's tool output: the structured
/// result in its exact JSON when mcp-service sends it (the `Struct` only from
/// an older one), and a failure's facts beside its reason.
pub fn tool_output(mut response: pb::ExecuteToolResponse) -> ToolOutput {
    let failure = response
        .is_error
        .then(|| failure_reason(response.failure_reason()));
    let facts = failure.and_then(|failure| failure_facts(failure, &mut response));
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
    let redacted = redactions(&response.guardrail_findings);
    let approval = response.approval.take();
    let denial_comment = match (failure, &approval) {
        (Some(ToolFailure::ApprovalDenied), Some(approval)) => Some(approval.comment.clone()),
        _ => None,
    };
    ToolOutput {
        failure,
        error_message: response.error_message,
        content: response
            .content
            .into_iter()
            .filter_map(into_content)
            .collect(),
        structured,
        input_required,
        approval: approval.map(approval_asked),
        denial_comment,
        facts,
        redacted,
    }
}

/// What the guardrails redacted in a result, by detector, with how many.
pub(super) fn redactions(findings: &[pb::GuardrailFinding]) -> Vec<(String, u32)> {
    findings
        .iter()
        .filter(|f| f.place == "result" && f.action == "redact")
        .map(|f| (f.detector.clone(), f.count))
        .collect()
}

/// What the run's caller needs of an approval mcp-service holds a call for.
fn approval_asked(approval: pb::Approval) -> ApprovalAsked {
    ApprovalAsked {
        expires_at: approval.expire_time.map_or(0, |t| {
            t.seconds
                .saturating_mul(1000)
                .saturating_add(i64::from(t.nanos / 1_000_000))
        }),
        id: approval.id,
        rule: approval.rule,
        reason: approval.reason,
        approver_role: approval.approver_role,
        requester_may_approve: approval.requester_may_approve,
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
                output_schema: t.output_schema.as_ref().map(struct_to_json),
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn failed(reason: pb::ToolFailureReason) -> pb::ExecuteToolResponse {
        pb::ExecuteToolResponse {
            is_error: true,
            error_message: "mcp-service's description".into(),
            failure_reason: reason.into(),
            ..Default::default()
        }
    }

    fn seconds(seconds: i64, nanos: i32) -> Option<prost_types::Duration> {
        Some(prost_types::Duration { seconds, nanos })
    }

    #[test]
    fn each_reason_brings_the_facts_of_its_own_fields() {
        use pb::ToolFailureReason as Reason;
        let cases = [
            (
                pb::ExecuteToolResponse {
                    timeout: seconds(2, 500_000_000),
                    ..failed(Reason::Timeout)
                },
                FailureFacts::Timeout(Duration::from_millis(2500)),
            ),
            (
                pb::ExecuteToolResponse {
                    result_limit_bytes: Some(4096),
                    ..failed(Reason::ResultTooLarge)
                },
                FailureFacts::TooLarge { limit_bytes: 4096 },
            ),
            (
                pb::ExecuteToolResponse {
                    detail: Some("refused".into()),
                    ..failed(Reason::ServerUnreachable)
                },
                FailureFacts::Unreachable {
                    detail: "refused".into(),
                },
            ),
            (
                pb::ExecuteToolResponse {
                    detail: Some("reset".into()),
                    ..failed(Reason::ConnectionLost)
                },
                FailureFacts::ConnectionLost {
                    detail: "reset".into(),
                },
            ),
            (
                pb::ExecuteToolResponse {
                    jsonrpc_error: Some(pb::JsonRpcError {
                        code: -32602,
                        message: "bad".into(),
                    }),
                    ..failed(Reason::ProtocolError)
                },
                FailureFacts::JsonRpc {
                    code: -32602,
                    message: "bad".into(),
                },
            ),
            (
                pb::ExecuteToolResponse {
                    detail: Some("too many pages".into()),
                    ..failed(Reason::ProtocolError)
                },
                FailureFacts::ListingBound {
                    detail: "too many pages".into(),
                },
            ),
            (
                pb::ExecuteToolResponse {
                    detail: Some("sessions in use".into()),
                    retry_after: seconds(1, 0),
                    ..failed(Reason::LimitReached)
                },
                FailureFacts::LimitReached {
                    detail: "sessions in use".into(),
                    retry_after: Duration::from_secs(1),
                },
            ),
        ];
        for (response, facts) in cases {
            let output = tool_output(response);
            assert_eq!(output.facts, Some(facts));
            assert_eq!(output.error_message, "mcp-service's description");
        }
    }

    #[test]
    fn an_older_mcp_service_sends_no_facts_and_is_quoted() {
        use pb::ToolFailureReason as Reason;
        for reason in [
            Reason::Timeout,
            Reason::ResultTooLarge,
            Reason::ServerUnreachable,
            Reason::ConnectionLost,
            Reason::ProtocolError,
            Reason::LimitReached,
        ] {
            let output = tool_output(failed(reason));
            assert_eq!(output.facts, None, "{reason:?}");
            assert_eq!(output.error_message, "mcp-service's description");
        }
    }

    #[test]
    fn facts_are_read_only_for_their_own_reason() {
        let everything = |reason: pb::ToolFailureReason| pb::ExecuteToolResponse {
            timeout: seconds(1, 0),
            result_limit_bytes: Some(1),
            detail: Some("words".into()),
            jsonrpc_error: Some(pb::JsonRpcError {
                code: 1,
                message: "m".into(),
            }),
            retry_after: seconds(1, 0),
            ..failed(reason)
        };
        let output = tool_output(everything(pb::ToolFailureReason::ToolError));
        assert_eq!(output.failure, Some(ToolFailure::ToolError));
        assert_eq!(output.facts, None);
        // A reason this version does not know: its description is all it has.
        let mut unknown = everything(pb::ToolFailureReason::Unspecified);
        unknown.failure_reason = 99;
        let output = tool_output(unknown);
        assert_eq!(output.failure, Some(ToolFailure::Other));
        assert_eq!(output.facts, None);
        // Facts of a call that did not fail are not read.
        let mut succeeded = everything(pb::ToolFailureReason::Timeout);
        succeeded.is_error = false;
        assert_eq!(tool_output(succeeded).facts, None);
    }

    #[test]
    fn facts_that_cannot_be_numbers_here_are_dropped() {
        use pb::ToolFailureReason as Reason;
        // A negative duration is no limit and no delay.
        let timeout = pb::ExecuteToolResponse {
            timeout: seconds(-1, 0),
            ..failed(Reason::Timeout)
        };
        assert_eq!(tool_output(timeout).facts, None);
        let limit = pb::ExecuteToolResponse {
            detail: Some("busy".into()),
            retry_after: seconds(0, -5),
            ..failed(Reason::LimitReached)
        };
        assert_eq!(tool_output(limit).facts, None);
        // A limit without its words, or words without their delay.
        let no_detail = pb::ExecuteToolResponse {
            retry_after: seconds(1, 0),
            ..failed(Reason::LimitReached)
        };
        assert_eq!(tool_output(no_detail).facts, None);
        let huge = pb::ExecuteToolResponse {
            result_limit_bytes: Some(u64::MAX),
            ..failed(Reason::ResultTooLarge)
        };
        assert_eq!(
            tool_output(huge).facts,
            usize::try_from(u64::MAX)
                .ok()
                .map(|limit_bytes| FailureFacts::TooLarge { limit_bytes })
        );
    }
}
