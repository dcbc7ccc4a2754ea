//! The limits of what a run accepts from its client, checked before
//! anything is stored.

use switchboard_server::FieldViolation;

use super::{error::RunsError, run::RunInput};

/// How large a run's input may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Largest user message, in bytes.
    pub max_user_message_bytes: usize,
    /// Most client tool results in one request.
    pub max_client_tool_results: usize,
    /// Largest content of one client tool result, in bytes.
    pub max_client_tool_result_bytes: usize,
}

impl InputLimits {
    /// Checks `input` against the limits, naming every field past one.
    pub fn check(&self, input: &RunInput) -> Result<(), RunsError> {
        let mut violations = Vec::new();
        match input {
            RunInput::UserMessage(text) => {
                if text.trim().is_empty() {
                    violations.push(FieldViolation::new("user_message.text", "is required"));
                } else if text.len() > self.max_user_message_bytes {
                    violations.push(FieldViolation::new(
                        "user_message.text",
                        format!("must be at most {} bytes", self.max_user_message_bytes),
                    ));
                }
            }
            RunInput::ClientToolResults { results, .. } => {
                if results.len() > self.max_client_tool_results {
                    violations.push(FieldViolation::new(
                        "client_tool_results.results",
                        format!("must be at most {} results", self.max_client_tool_results),
                    ));
                }
                violations.extend(
                    results
                        .iter()
                        .enumerate()
                        .filter(|(_, result)| {
                            result.content.len() > self.max_client_tool_result_bytes
                        })
                        .map(|(i, _)| {
                            FieldViolation::new(
                                format!("client_tool_results.results[{i}].content"),
                                format!(
                                    "must be at most {} bytes",
                                    self.max_client_tool_result_bytes
                                ),
                            )
                        }),
                );
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(RunsError::Invalid(violations))
        }
    }
}
