//! MCP content (tool results, embedded resources, prompt messages) as the
//! model reads it: text as is, everything else described, binary content
//! never inlined.

use super::{approval_denied, failures::tool_failure, mcp_tool_failed};
use crate::domain::ports::{Content, ToolFailure, ToolOutput};

/// One block of content as text.
pub fn render_content(content: &Content) -> String {
    match content {
        Content::Text(text) => text.clone(),
        Content::Image { mime_type, bytes } => format!("[image: {mime_type}, {bytes} bytes]"),
        Content::Audio { mime_type, bytes } => format!("[audio: {mime_type}, {bytes} bytes]"),
        Content::Resource {
            uri,
            text: Some(text),
            ..
        } => format!("[resource {uri}]\n{text}"),
        Content::Resource {
            uri,
            mime_type,
            blob_bytes: Some(bytes),
            ..
        } => format!("[resource {uri}: {mime_type}, {bytes} bytes]"),
        Content::Resource { uri, .. } => format!("[resource {uri}]"),
        Content::ResourceLink { uri, name } => format!("[resource link: {uri} ({name})]"),
    }
}

/// The result of the tool `tool` as the model reads it, and whether it is an
/// error: the blocks joined by lines, and the structured result as its exact
/// JSON when no text carries it. A failure is worded from its facts; the
/// tool's own error carries its words (its text blocks, or
/// [`TOOL_EXECUTION_FAILED`] when it has none), and mcp-service's
/// description is quoted only when no facts came with the reason.
pub fn tool_output(tool: &str, output: &ToolOutput) -> (String, bool) {
    if output.failure == Some(ToolFailure::ApprovalDenied) {
        let comment = output.denial_comment.as_deref().unwrap_or_default();
        return (approval_denied(tool, comment), true);
    }
    if let Some(failure) = output.failure {
        let message = match tool_failure(tool, failure, output.facts.as_ref()) {
            Some(worded) => worded,
            None if failure == ToolFailure::ToolError => tool_error_text(output),
            None if output.error_message.is_empty() => rendered(output),
            None => output.error_message.clone(),
        };
        return (mcp_tool_failed(&message), true);
    }
    let text = rendered(output);
    let text = if text.is_empty() {
        "The tool returned no content.".to_owned()
    } else {
        text
    };
    if output.redacted.is_empty() {
        (text, false)
    } else {
        (format!("{text}\n\n{}", redacted(&output.redacted)), false)
    }
}

/// What the guardrails removed from a result, told to the model after it.
pub fn redacted(removed: &[(String, u32)]) -> String {
    let items: Vec<String> = removed
        .iter()
        .map(|(detector, count)| format!("{count} × {detector}"))
        .collect();
    format!(
        "[Switchboard's guardrails removed from this result: {}. Each is marked [redacted …] where it was.]",
        items.join(", ")
    )
}

/// What the model reads of a tool's own error without text (ticket 018's
/// default, inside ticket 029's `MCP tool execution failed: …`).
pub const TOOL_EXECUTION_FAILED: &str = "Tool execution failed";

/// A tool's own error: its text blocks, joined by lines as mcp-service
/// joins them; when it has no text, the reference's words rather than a
/// description of the empty result.
fn tool_error_text(output: &ToolOutput) -> String {
    let texts: Vec<&str> = output
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.join("\n");
    if text.trim().is_empty() {
        TOOL_EXECUTION_FAILED.to_owned()
    } else {
        text
    }
}

/// The bytes of a successful result's text as [`tool_output`] renders it,
/// counted without rendering it.
pub fn rendered_len(output: &ToolOutput) -> usize {
    let blocks: usize = output
        .content
        .iter()
        .map(|c| match c {
            Content::Text(text) => text.len(),
            Content::Resource {
                uri,
                text: Some(text),
                ..
            } => "[resource ]\n".len() + uri.len() + text.len(),
            other => render_content(other).len(),
        })
        .sum();
    let has_text = output.content.iter().any(|c| matches!(c, Content::Text(_)));
    let structured = match &output.structured {
        Some(structured) if !has_text => Some(structured.len()),
        _ => None,
    };
    let lines = output.content.len() + usize::from(structured.is_some());
    blocks + structured.unwrap_or(0) + lines.saturating_sub(1)
}

/// A successful result's text as [`tool_output`] renders it, taken out of
/// `output`: a result of one text block (as a large one usually is) is
/// moved, not copied.
pub fn into_rendered(mut output: ToolOutput) -> String {
    if let [Content::Text(_)] = output.content.as_slice()
        && let Some(Content::Text(text)) = output.content.pop()
    {
        return text;
    }
    rendered(&output)
}

fn rendered(output: &ToolOutput) -> String {
    let mut lines: Vec<String> = output.content.iter().map(render_content).collect();
    let has_text = output.content.iter().any(|c| matches!(c, Content::Text(_)));
    if !has_text && let Some(structured) = &output.structured {
        lines.push(structured.clone());
    }
    lines.join("\n")
}
