//! Every text the model reads about tools, in one place. The wording of the
//! failures follows the original system's, which prompts and evaluations were
//! written against.

use super::ports::{McpCallError, ToolOutput};

/// The model named a tool it was not offered.
pub fn tool_not_found(name: &str) -> String {
    format!(
        "A tool with the name {name} was not found. Only use tools that are available in your given list of tools."
    )
}

/// An MCP tool reported an error (its own, a timeout, an oversized result).
pub fn mcp_tool_failed(message: &str) -> String {
    format!("MCP tool execution failed: {message}")
}

/// The call to mcp-service itself failed.
pub fn mcp_call_failed(error: &McpCallError) -> String {
    match error {
        McpCallError::Timeout => {
            mcp_tool_failed("the tool did not answer in time and the call was cancelled")
        }
        McpCallError::Failed(message) => {
            format!("MCP tool execution failed unexpectedly: {message}")
        }
    }
}

/// The model's arguments are not a JSON object.
pub fn invalid_arguments(error: &str) -> String {
    mcp_tool_failed(&format!("the arguments are not a JSON object ({error})"))
}

/// An MCP tool's result as the model reads it, and whether it is an error.
pub fn tool_output(output: &ToolOutput) -> (String, bool) {
    if output.is_error {
        let message = if output.error_message.is_empty() {
            output.text.as_str()
        } else {
            output.error_message.as_str()
        };
        (mcp_tool_failed(message), true)
    } else if output.text.is_empty() {
        ("The tool returned no content.".to_owned(), false)
    } else {
        (output.text.clone(), false)
    }
}

/// The one-line note telling the model an integration is unavailable.
pub fn integrations_unavailable(failed: &[(String, String)]) -> Option<String> {
    if failed.is_empty() {
        return None;
    }
    let list: Vec<String> = failed
        .iter()
        .map(|(id, error)| format!("{id} ({error})"))
        .collect();
    Some(format!(
        "Note: these MCP integrations could not be reached for this conversation and their tools are unavailable: {}.",
        list.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_texts_keep_the_reference_wording() {
        assert_eq!(
            tool_not_found("x__y"),
            "A tool with the name x__y was not found. Only use tools that are available in your given list of tools."
        );
        let (text, is_error) = tool_output(&ToolOutput {
            is_error: true,
            error_message: "boom".into(),
            text: String::new(),
        });
        assert_eq!(
            (text.as_str(), is_error),
            ("MCP tool execution failed: boom", true)
        );
        assert_eq!(
            mcp_call_failed(&McpCallError::Failed("mcp-service is unavailable".into())),
            "MCP tool execution failed unexpectedly: mcp-service is unavailable"
        );
    }
}
