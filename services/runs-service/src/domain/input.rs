//! What a run starts from, and the limits of what it accepts from its
//! client, checked before anything is stored.

use std::collections::BTreeMap;

use switchboard_server::FieldViolation;

use super::ids::RunId;

/// The result of one client-side tool call.
#[derive(Debug, Clone)]
pub struct ClientResult {
    /// The call it answers.
    pub tool_call_id: String,
    /// Text for the model.
    pub content: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// The caller's answers to what one MCP tool call asked.
#[derive(Debug, Clone)]
pub struct ToolAnswers {
    /// The call they answer.
    pub tool_call_id: String,
    /// JSON text of each answer, by the server's key.
    pub responses: BTreeMap<String, String>,
}

/// The caller's word on one call an approval holds.
#[derive(Debug, Clone)]
pub struct ApprovalChoice {
    /// The call it is for.
    pub tool_call_id: String,
    /// Approve or deny as the caller first; `None` when an approver
    /// decided elsewhere.
    pub approve: Option<bool>,
    /// Words for the approval's record.
    pub comment: String,
}

/// What a run starts from.
#[derive(Debug, Clone)]
pub enum RunInput {
    /// A new user message.
    UserMessage(String),
    /// What a paused run waits for: the results of its client tool calls
    /// and the answers its MCP tool calls asked for.
    ClientToolResults {
        /// The paused run.
        run_id: RunId,
        /// The client tools' results.
        results: Vec<ClientResult>,
        /// The answers.
        answers: Vec<ToolAnswers>,
        /// The word on each call an approval holds.
        approvals: Vec<ApprovalChoice>,
    },
}

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

/// The fields of a run's input past their limits, every one named. The
/// service error wraps it from above.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid request")]
pub struct InvalidInput(pub Vec<FieldViolation>);

impl InputLimits {
    /// Checks `input` against the limits, naming every field past one.
    pub fn check(&self, input: &RunInput) -> Result<(), InvalidInput> {
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
            RunInput::ClientToolResults {
                results,
                answers,
                approvals,
                ..
            } => {
                self.check_results(results, answers, approvals.len(), &mut violations);
                check_comments(approvals, &mut violations);
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(InvalidInput(violations))
        }
    }

    /// Client tool results and answers share the count limit; each result
    /// and each answer has the size limit, and an answer must be a JSON
    /// object (the result the MCP specification defines for its request).
    fn check_results(
        &self,
        results: &[ClientResult],
        answers: &[ToolAnswers],
        approvals: usize,
        violations: &mut Vec<FieldViolation>,
    ) {
        let count = results
            .len()
            .saturating_add(
                answers
                    .iter()
                    .map(|a| a.responses.len().max(1))
                    .sum::<usize>(),
            )
            .saturating_add(approvals);
        if count > self.max_client_tool_results {
            let field = if answers.is_empty() && approvals == 0 {
                "client_tool_results.results"
            } else {
                "client_tool_results"
            };
            violations.push(FieldViolation::new(
                field,
                format!(
                    "must hold at most {} results and answers",
                    self.max_client_tool_results
                ),
            ));
            return;
        }
        let too_large = format!(
            "must be at most {} bytes",
            self.max_client_tool_result_bytes
        );
        for (i, result) in results.iter().enumerate() {
            if result.content.len() > self.max_client_tool_result_bytes {
                violations.push(FieldViolation::new(
                    format!("client_tool_results.results[{i}].content"),
                    too_large.clone(),
                ));
            }
        }
        for (i, answer) in answers.iter().enumerate() {
            for (key, response) in &answer.responses {
                let field = format!("client_tool_results.input_answers[{i}].responses[{key:?}]");
                if response.len() > self.max_client_tool_result_bytes {
                    violations.push(FieldViolation::new(field, too_large.clone()));
                } else if !is_json_object(response) {
                    violations.push(FieldViolation::new(field, "must be a JSON object"));
                }
            }
        }
    }
}

/// The most bytes of an approval decision's comment (ApprovalService's own
/// limit, checked here so that nothing is decided or stored past it).
pub const MAX_APPROVAL_COMMENT_BYTES: usize = 1024;

fn check_comments(approvals: &[ApprovalChoice], violations: &mut Vec<FieldViolation>) {
    for (i, choice) in approvals.iter().enumerate() {
        if choice.comment.len() > MAX_APPROVAL_COMMENT_BYTES {
            violations.push(FieldViolation::new(
                format!("client_tool_results.approval_decisions[{i}].comment"),
                format!("must be at most {MAX_APPROVAL_COMMENT_BYTES} bytes"),
            ));
        }
    }
}

fn is_json_object(text: &str) -> bool {
    matches!(
        serde_json::from_str::<serde_json::Value>(text),
        Ok(serde_json::Value::Object(_))
    )
}
