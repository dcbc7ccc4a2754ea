//! What a caller sends with a call, checked against [`CallBounds`] by the
//! call use cases before anything of it is recorded, logged or sent: the
//! session scope, a resumed task's id, the arguments and the answers. A
//! refusal is the field it names; the service error wraps it from above.

use serde_json::{Map, Value};
use switchboard_server::FieldViolation;

use super::{
    bounds::{CallBounds, SESSION_SCOPE, TASK_ID},
    ports::{InputAnswers, ToolCall},
};

/// Refuses a tool call past its bounds: its session scope, task id,
/// arguments and answers (its name is a `ToolName` already).
pub fn check_tool_call(
    bounds: &CallBounds,
    call: &ToolCall,
    session_scope: &str,
) -> Result<(), FieldViolation> {
    if let Some(task_id) = &call.task_id {
        TASK_ID.check("task_id", task_id)?;
    }
    check_input(bounds, session_scope, &call.arguments, &call.answers)
}

/// Refuses a call's session scope, arguments (or parameters) and answers
/// past their bounds.
pub fn check_input(
    bounds: &CallBounds,
    session_scope: &str,
    arguments: &Map<String, Value>,
    answers: &InputAnswers,
) -> Result<(), FieldViolation> {
    SESSION_SCOPE.check_optional("session_scope", session_scope)?;
    bounds.check_arguments("arguments", arguments)?;
    bounds.check_arguments("input_responses", &answers.responses)?;
    if let Some(state) = &answers.request_state {
        bounds.check_arguments("request_state", state)?;
    }
    Ok(())
}
