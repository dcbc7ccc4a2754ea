//! [`CONFIRM_TOOL`], a tool that asks for input before it finishes, the way
//! a server of 2026-07-28 asks (multi-round-trip requests): its first answer
//! is an `input_required` result with a form elicitation and a
//! `requestState`; the client makes the call again with the answer and that
//! state, and the tool reports what it was told.

use rmcp::{
    ErrorData as McpError,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult,
        JsonObject, PromptMessage, Role, Tool,
    },
};
use serde_json::{Value, json};

/// Name of an unlisted tool that asks the client to confirm its `action`
/// argument before it finishes (an `input_required` result), then reports
/// the answer: `confirmed <action>`, `not confirmed <action>`, `declined
/// <action>` or `cancelled <action>`, with the answer itself as its
/// structured result. An unlisted prompt of the same name does the same,
/// the verdict its one message. Unlisted, so that listings stay as they
/// are.
pub const CONFIRM_TOOL: &str = "confirm";

/// A tool of that kind as listed, when the server lists them
/// ([`crate::ExampleServer::with_confirm_tool`]): [`CONFIRM_TOOL`], or
/// [`crate::TASK_CONFIRM_TOOL`], which asks the same inside a task.
pub(crate) fn tool(name: &'static str) -> Tool {
    Tool::new(
        name,
        "Asks the user to confirm an action before it is done, then reports their answer.",
        std::sync::Arc::new(serde_json::Map::from_iter([
            ("type".to_owned(), json!("object")),
            (
                "properties".to_owned(),
                json!({"action": {"type": "string", "description": "What to do."}}),
            ),
            ("required".to_owned(), json!(["action"])),
        ])),
    )
}

/// The key of the tool's one input request.
pub const CONFIRM_KEY: &str = "confirm";

/// The state the tool gives with its question: what it asked about. A
/// server that trusted this for anything would seal it; the tool only
/// checks it comes back unchanged.
fn request_state(action: &str) -> String {
    format!("confirm:{action}")
}

/// What the client answered, when it has: `confirmed`, `not confirmed`,
/// `declined` or `cancelled`, with the answer itself; `None` on the first
/// round.
fn verdict(
    action: &str,
    responses: Option<&rmcp::model::InputResponses>,
    state: Option<&str>,
) -> Result<Option<(&'static str, Value)>, McpError> {
    let Some(answer) = responses.and_then(|responses| responses.get(CONFIRM_KEY)) else {
        return Ok(None);
    };
    if state != Some(request_state(action).as_str()) {
        return Err(McpError::invalid_params(
            "requestState is missing or was changed",
            None,
        ));
    }
    Ok(Some((verdict_of(answer)?, answer.clone())))
}

/// What an elicitation result says: `confirmed`, `not confirmed`,
/// `declined` or `cancelled`.
pub(crate) fn verdict_of(answer: &Value) -> Result<&'static str, McpError> {
    let confirmed = answer.pointer("/content/confirmed") == Some(&Value::Bool(true));
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") if confirmed => Ok("confirmed"),
        Some("accept") => Ok("not confirmed"),
        Some("decline") => Ok("declined"),
        Some("cancel") => Ok("cancelled"),
        _ => Err(McpError::invalid_params(
            "the answer is not an elicitation result",
            None,
        )),
    }
}

pub(crate) fn action_of(arguments: Option<&JsonObject>) -> Result<&str, McpError> {
    arguments
        .and_then(|arguments| arguments.get("action"))
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params("invalid arguments: `action` is required", None))
}

/// One round of the tool.
pub fn call(request: &CallToolRequestParams) -> Result<CallToolResponse, McpError> {
    let action = action_of(request.arguments.as_ref())?;
    let verdict = verdict(
        action,
        request.input_responses.as_ref(),
        request.request_state.as_deref(),
    )?;
    let Some((verdict, answer)) = verdict else {
        return question(action).map(CallToolResponse::InputRequired);
    };
    let mut result =
        CallToolResult::success(vec![ContentBlock::text(format!("{verdict} {action}"))]);
    result.structured_content = Some(json!({ "answer": answer }));
    Ok(CallToolResponse::Complete(result))
}

/// One round of the prompt of the same name, which asks the same question
/// and renders the answer as its one message.
pub fn prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, McpError> {
    let action = action_of(request.arguments.as_ref())?;
    let verdict = verdict(
        action,
        request.input_responses.as_ref(),
        request.request_state.as_deref(),
    )?;
    let Some((verdict, _)) = verdict else {
        return question(action).map(GetPromptResponse::InputRequired);
    };
    Ok(GetPromptResponse::Complete(GetPromptResult::new(vec![
        PromptMessage::new_text(Role::User, format!("{verdict} {action}")),
    ])))
}

fn question(action: &str) -> Result<InputRequiredResult, McpError> {
    let requests =
        serde_json::from_value(json!({ CONFIRM_KEY: elicitation(action) })).map_err(|error| {
            McpError::internal_error(format!("invalid input request: {error}"), None)
        })?;
    Ok(InputRequiredResult::new(
        Some(requests),
        Some(request_state(action)),
    ))
}

/// The form elicitation asking whether to go ahead with `action`, as an
/// input request's wire JSON.
pub(crate) fn elicitation(action: &str) -> Value {
    json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": format!("Go ahead with {action}?"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "confirmed": {
                            "type": "boolean",
                            "description": "Whether to go ahead",
                            "default": false
                        }
                    },
                    "required": ["confirmed"]
                }
            }
    })
}
