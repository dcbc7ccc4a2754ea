//! `retrieve_mcp_prompt`: a prompt of an integration, rendered with role
//! labels.

use std::time::Duration;

use super::{
    ToolArguments,
    outcome::{ToolContext, ToolOutcome},
};
use crate::domain::{
    ports::{McpPort, McpPromptRequest},
    texts,
};

/// Renders the prompt the model names.
pub(super) async fn retrieve(
    mcp: &dyn McpPort,
    context: &ToolContext,
    arguments: &ToolArguments,
    timeout: Duration,
) -> ToolOutcome {
    let failed = |message: &str| ToolOutcome::failed(texts::prompt_failed(message));
    let Some(named) = arguments.text_arg("integrationId") else {
        return failed(&texts::parameter_required("integrationId"));
    };
    let Some(name) = arguments.text_arg("promptName") else {
        return failed(&texts::parameter_required("promptName"));
    };
    let Some(integration) = context.integration(named) else {
        return failed(&texts::integration_unavailable(named));
    };
    let scope = context.thread_id.to_string();
    let prompt = McpPromptRequest {
        integration_id: integration.integration_id,
        name,
        arguments: &arguments.object_arg("arguments"),
        scope: &scope,
    };
    match mcp.get_prompt(&context.caller, prompt, timeout).await {
        Ok((description, lines)) => {
            ToolOutcome::succeeded(texts::prompt_rendered(name, &description, &lines))
        }
        Err(error) => failed(&texts::mcp_error(&error)),
    }
}
