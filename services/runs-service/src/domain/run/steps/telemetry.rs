//! The spans of a step's model call and tool calls (OpenTelemetry GenAI
//! conventions), and their metrics.

use super::{Running, Stop, Turn, model_turn::Attempt};
use crate::domain::{
    entities::ModelChoice,
    events::ToolCallStatus,
    model::{ChatMessage, ToolCall},
    ports::ModelProvider,
    tools::{ToolOutcome, Toolset},
};

impl Running<'_> {
    /// One model's attempt at a turn ([`Running::model_turn`]) in its
    /// `chat {model}` span (GenAI conventions), with its token usage and
    /// duration recorded on the span and as metrics.
    pub(super) async fn chat_with(
        &mut self,
        toolset: &Toolset,
        choice: &ModelChoice,
        provider: &dyn ModelProvider,
        may_move_on: bool,
    ) -> Attempt {
        let span = tracing::info_span!(
            "chat",
            otel.name = %format!("chat {}", choice.model),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = %choice.provider,
            gen_ai.request.model = %choice.model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.system_instructions = tracing::field::Empty,
            gen_ai.input.messages = tracing::field::Empty,
            gen_ai.output.messages = tracing::field::Empty,
        );
        let capture = switchboard_telemetry::capture_content();
        if capture && let Some(system) = &self.system {
            span.record("gen_ai.system_instructions", system.as_str());
        }
        let before = self.run.usage;
        let started = std::time::Instant::now();
        let attempt = tracing::Instrument::instrument(
            self.model_turn(toolset, choice, provider, may_move_on),
            span.clone(),
        )
        .await;
        let used = |after: i64, before: i64| u64::try_from(after - before).unwrap_or(0);
        let input = used(self.run.usage.input_tokens, before.input_tokens);
        let output = used(self.run.usage.output_tokens, before.output_tokens);
        span.record("gen_ai.usage.input_tokens", input);
        span.record("gen_ai.usage.output_tokens", output);
        let error_type = match &attempt {
            Attempt::Ended(Ok(turn)) => {
                if capture {
                    span.record("gen_ai.output.messages", output_messages(turn).as_str());
                }
                None
            }
            Attempt::Ended(Err(Stop::Disconnected | Stop::Cancelled)) => Some("cancelled"),
            Attempt::Ended(Err(Stop::Ended)) => Some("ended"),
            Attempt::Ended(Err(Stop::Failed(error))) => {
                switchboard_telemetry::record_error(&span, "model_error", &error.to_string());
                Some("model_error")
            }
            Attempt::MovedOn(error) => {
                switchboard_telemetry::record_error(&span, "model_error", &error.to_string());
                Some("model_error")
            }
        };
        crate::metrics::model_call(
            &choice.provider,
            &choice.model,
            started.elapsed(),
            Some((input, output)),
            error_type,
        );
        attempt
    }
}

/// What a model request carries of the thread, as the GenAI conventions'
/// `gen_ai.input.messages`.
pub(super) fn input_messages(messages: &[ChatMessage]) -> String {
    let message = |message: &ChatMessage| match message {
        ChatMessage::User { text } => serde_json::json!({
            "role": "user",
            "parts": [{"type": "text", "content": text}],
        }),
        ChatMessage::Assistant { text, tool_calls } => {
            let mut parts = vec![serde_json::json!({"type": "text", "content": text})];
            parts.extend(tool_calls.iter().map(tool_call_part));
            serde_json::json!({"role": "assistant", "parts": parts})
        }
        ChatMessage::ToolResult {
            call_id, content, ..
        } => serde_json::json!({
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": call_id, "response": content}],
        }),
    };
    serde_json::Value::Array(messages.iter().map(message).collect()).to_string()
}

fn tool_call_part(call: &ToolCall) -> serde_json::Value {
    serde_json::json!({
        "type": "tool_call",
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
    })
}

/// The model's answer as the GenAI conventions' `gen_ai.output.messages`.
fn output_messages(turn: &Turn) -> String {
    let mut parts = vec![serde_json::json!({"type": "text", "content": turn.text})];
    parts.extend(turn.calls.iter().map(tool_call_part));
    serde_json::json!([{"role": "assistant", "parts": parts}]).to_string()
}

/// One tool call in its `execute_tool {name}` span. Its arguments and result
/// are recorded only when the operator turned content capture on.
pub(super) async fn execute_tool(
    call: &ToolCall,
    work: impl Future<Output = ToolOutcome>,
) -> ToolOutcome {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = %format!("execute_tool {}", call.name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
    );
    let capture = switchboard_telemetry::capture_content();
    if capture {
        span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
    }
    let outcome = tracing::Instrument::instrument(work, span.clone()).await;
    if capture {
        span.record("gen_ai.tool.call.result", outcome.text.as_str());
    }
    let error_type = match outcome.status {
        ToolCallStatus::Succeeded
        | ToolCallStatus::InputRequired
        | ToolCallStatus::ApprovalRequired => None,
        ToolCallStatus::Failed => Some("tool_error"),
        ToolCallStatus::TimedOut => Some("timeout"),
        ToolCallStatus::NotFound => Some("tool_not_found"),
        ToolCallStatus::MayHaveRun => Some("may_have_run"),
    };
    if let Some(error_type) = error_type {
        switchboard_telemetry::record_error(&span, error_type, "the tool call failed");
    }
    outcome
}
