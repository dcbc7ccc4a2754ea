//! MCP content (tool results, embedded resources, prompt messages) as the
//! model reads it: text as is, everything else described, binary content
//! never inlined.

use super::mcp_tool_failed;
use crate::domain::ports::{Content, ToolOutput};

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

/// A tool's result as the model reads it, and whether it is an error: the
/// blocks joined by lines, and the structured result as its exact JSON when
/// no text carries it.
pub fn tool_output(output: &ToolOutput) -> (String, bool) {
    if output.failure.is_some() {
        let message = if output.error_message.is_empty() {
            rendered(output)
        } else {
            output.error_message.clone()
        };
        return (mcp_tool_failed(&message), true);
    }
    let text = rendered(output);
    if text.is_empty() {
        ("The tool returned no content.".to_owned(), false)
    } else {
        (text, false)
    }
}

fn rendered(output: &ToolOutput) -> String {
    let mut lines: Vec<String> = output.content.iter().map(render_content).collect();
    let has_text = output.content.iter().any(|c| matches!(c, Content::Text(_)));
    if !has_text && let Some(structured) = &output.structured {
        lines.push(structured.clone());
    }
    lines.join("\n")
}
