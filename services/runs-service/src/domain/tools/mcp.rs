//! A call of an MCP tool through mcp-service.

use std::time::Duration;

use super::{
    ToolArguments,
    large_result::{LargeResult, LargeResults},
    outcome::{ToolAction, ToolContext, ToolOutcome},
    result_check::ResultChecks,
};
use crate::domain::{
    entities::{InputAnswers, PendingApproval, PendingInput},
    events::ToolCallStatus,
    ids::IntegrationId,
    ports::{McpCallError, McpPort, McpToolRequest, ToolFailure, ToolOutput},
    texts,
};

/// One call of a server's tool.
pub(super) struct McpToolCall<'a> {
    pub(super) integration_id: IntegrationId,
    pub(super) tool: &'a str,
    pub(super) arguments: &'a ToolArguments,
    /// The caller's answers, when the call is made again after the server
    /// asked something.
    pub(super) answers: Option<&'a InputAnswers>,
    /// The approval the call was gated by, when it is made again after the
    /// run paused for it.
    pub(super) approval: Option<&'a PendingApproval>,
    /// The agent's allow-list of the integration's tools, for mcp-service
    /// to enforce too.
    pub(super) allowed_tools: Option<&'a [String]>,
    /// The run's output schemas and the model's name for the tool, to check
    /// its structured result by.
    pub(super) results: Option<(&'a ResultChecks, &'a str)>,
    /// Where a result too long for the context goes.
    pub(super) large: LargeResults<'a>,
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
        tracing::info!(
            %integration_id,
            tool,
            resumed = self.answers.is_some() || self.approval.is_some(),
            "executing MCP tool"
        );
        let scope = context.thread_id.to_string();
        let request = McpToolRequest {
            integration_id,
            tool,
            arguments: self.arguments.text(),
            scope: &scope,
            answers: self.answers,
            approval_id: self.approval.map(|held| held.asked.id.as_str()),
            allowed_tools: self.allowed_tools,
        };
        match mcp.execute_tool(&context.caller, request, timeout).await {
            Ok(output) => self.returned(output, context).await,
            Err(McpCallError::ApprovalPending) if let Some(held) = self.approval => {
                tracing::info!(%integration_id, tool, "the call's approval is still pending");
                waiting_for(held.clone())
            }
            Err(McpCallError::ApprovalUnusable { why, message }) => {
                tracing::info!(%integration_id, tool, %message, "the call's approval cannot be used");
                ToolOutcome::failed(texts::approval_unusable(tool, why))
            }
            Err(error) => {
                tracing::warn!(%integration_id, tool, error_type = error.kind(), error = %error, "MCP tool call failed");
                let status = match error {
                    McpCallError::Timeout => ToolCallStatus::TimedOut,
                    _ => ToolCallStatus::Failed,
                };
                let action = match &error {
                    McpCallError::AuthorizationRequired { url } => Some(ToolAction::Authorize {
                        integration_id,
                        url: url.clone(),
                    }),
                    _ => None,
                };
                ToolOutcome {
                    text: texts::mcp_call_failed(&error),
                    is_error: true,
                    status,
                    action,
                    sources_changed: false,
                }
            }
        }
    }

    /// What the server's answer means for the run: a result for the model,
    /// or questions for the caller.
    async fn returned(&self, mut output: ToolOutput, context: &ToolContext) -> ToolOutcome {
        let (integration_id, tool) = (self.integration_id, self.tool);
        if output.failure == Some(ToolFailure::InputRequired)
            && let Some(asked) = output.input_required.take()
        {
            tracing::info!(
                %integration_id,
                tool,
                "the MCP server asks the caller before it completes the call"
            );
            return ToolOutcome {
                text: String::new(),
                is_error: false,
                status: ToolCallStatus::InputRequired,
                action: Some(ToolAction::Input(Box::new(PendingInput {
                    integration_id,
                    tool: tool.to_owned(),
                    asked,
                }))),
                sources_changed: false,
            };
        }
        if output.failure == Some(ToolFailure::ApprovalRequired)
            && let Some(asked) = output.approval.take()
        {
            tracing::info!(%integration_id, tool, rule = %asked.rule, "the call waits for an approval");
            return waiting_for(PendingApproval {
                integration_id,
                tool: tool.to_owned(),
                asked,
            });
        }
        if output.failure.is_none()
            && let Some((checks, name)) = self.results
            && let Some(mismatch) = checks.mismatch(name, output.structured.as_deref())
        {
            tracing::warn!(
                %integration_id,
                tool,
                "the tool's structured result does not match its output schema"
            );
            return ToolOutcome::failed(texts::result_mismatch(tool, &mismatch));
        }
        if output.failure.is_none() && self.large.too_long(texts::rendered_len(&output)) {
            let large = LargeResult {
                context,
                integration_id,
                tool,
            };
            return self
                .large
                .deliver(&large, texts::into_rendered(output))
                .await;
        }
        self.rendered(&output)
    }

    /// A result (or the tool's error) as it is: its text for the model.
    fn rendered(&self, output: &ToolOutput) -> ToolOutcome {
        let (integration_id, tool) = (self.integration_id, self.tool);
        let (text, is_error) = texts::tool_output(tool, output);
        let status = match output.failure {
            None => ToolCallStatus::Succeeded,
            Some(ToolFailure::Timeout) => ToolCallStatus::TimedOut,
            Some(_) => ToolCallStatus::Failed,
        };
        tracing::info!(%integration_id, tool, is_error, status = ?status, "MCP tool executed");
        ToolOutcome {
            text,
            is_error,
            status,
            action: None,
            sources_changed: false,
        }
    }
}

/// A call that waits for `approval`: the run pauses (the model reads
/// nothing yet).
fn waiting_for(approval: PendingApproval) -> ToolOutcome {
    ToolOutcome {
        text: String::new(),
        is_error: false,
        status: ToolCallStatus::ApprovalRequired,
        action: Some(ToolAction::Approval(Box::new(approval))),
        sources_changed: false,
    }
}
