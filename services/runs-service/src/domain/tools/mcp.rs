//! A call of an MCP tool through mcp-service.

use std::time::Duration;

use super::{ToolArguments, ToolContext, ToolOutcome};
use crate::domain::{
    ports::{McpCallError, McpPort, ToolFailure},
    run::ToolCallStatus,
    texts,
};

/// One call of a server's tool.
pub(super) struct McpToolCall<'a> {
    pub(super) integration_id: &'a str,
    pub(super) tool: &'a str,
    pub(super) arguments: &'a ToolArguments,
}

impl McpToolCall<'_> {
    /// Calls the tool; its result, error or timeout becomes the outcome.
    pub(super) async fn run(
        &self,
        mcp: &dyn McpPort,
        context: &ToolContext,
        timeout: Duration,
    ) -> ToolOutcome {
        let (integration_id, tool) = (self.integration_id, self.tool);
        let outcome = mcp
            .execute_tool(
                &context.caller,
                integration_id,
                tool,
                self.arguments.text(),
                &context.thread_id,
                timeout,
            )
            .await;
        match outcome {
            Ok(output) => {
                let (text, is_error) = texts::tool_output(&output);
                tracing::info!(integration_id, tool, is_error, "MCP tool executed");
                let status = match output.failure {
                    None => ToolCallStatus::Succeeded,
                    Some(ToolFailure::Timeout) => ToolCallStatus::TimedOut,
                    Some(_) => ToolCallStatus::Failed,
                };
                ToolOutcome {
                    text,
                    is_error,
                    status,
                }
            }
            Err(error) => {
                tracing::warn!(integration_id, tool, error = %error, "MCP tool call failed");
                let status = match error {
                    McpCallError::Timeout => ToolCallStatus::TimedOut,
                    _ => ToolCallStatus::Failed,
                };
                ToolOutcome {
                    text: texts::mcp_call_failed(&error),
                    is_error: true,
                    status,
                }
            }
        }
    }
}
