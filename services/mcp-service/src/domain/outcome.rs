//! What a server answered a call with, decided once where its answer is
//! read (the MCP client adapter): the result, or a request for input only
//! the caller can give. Inbound, audit and policy match on these types and
//! never look into the protocol's JSON for `resultType` or `isError`.
//!
//! The vocabulary is the protocol's own, as `rmcp::model` types it (the
//! serde data types only, never a session or a transport): a result the MCP
//! endpoint passes on reaches its client without being written out and read
//! again. Exact JSON (structured results, schemas, arguments) stays
//! `serde_json` inside those types.

use rmcp::model::{CallToolResult, InputRequest, InputRequests};

/// A server's answer to a request that may ask for input first
/// (`tools/call`, `resources/read`, `prompts/get`).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The request is complete: the server's result.
    Complete(T),
    /// The server needs input only the caller can give before it completes.
    InputRequired(InputRequired),
}

/// A tool call's answer: its `CallToolResult`, or input required.
pub type ToolOutcome = Outcome<CallToolResult>;

impl ToolOutcome {
    /// Whether the tool reported an error (`isError`; absent is false, as
    /// the protocol says). Input required is not an error of the tool.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Complete(result) if reports_error(result))
    }
}

/// Whether a tool's result reports an error (`isError`; absent is false,
/// as the protocol says): the one reading of the flag.
pub fn reports_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// What a server asks of the caller before it completes a request: its
/// requests, the opaque state the caller sends back unchanged, and the
/// server's task waiting for the answers, when a task asks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    /// The requests (elicitation, sampling, roots), by the keys the caller
    /// answers them under.
    pub requests: InputRequests,
    /// The server's `requestState`, unchanged.
    pub request_state: Option<String>,
    /// The server's task the answers are for, when a task asks.
    pub task_id: Option<String>,
}

impl InputRequired {
    /// The messages of the elicitations asked, in key order: what a person
    /// reads of the questions.
    pub fn questions(&self) -> impl Iterator<Item = &str> {
        self.requests.values().filter_map(|request| match request {
            InputRequest::Elicitation(elicitation) => Some(elicitation_message(elicitation)),
            _ => None,
        })
    }
}

fn elicitation_message(request: &rmcp::model::ElicitRequest) -> &str {
    use rmcp::model::ElicitRequestParams as Params;
    match &request.params {
        Params::FormElicitationParams { message, .. }
        | Params::UrlElicitationParams { message, .. } => message,
        #[allow(unreachable_patterns)]
        _ => "",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use rmcp::model::ContentBlock;
    use serde_json::json;

    use super::*;

    #[test]
    fn only_a_result_that_says_so_is_an_error() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("ok")]);
        assert!(!ToolOutcome::Complete(result.clone()).is_error());
        result.is_error = None;
        assert!(!ToolOutcome::Complete(result.clone()).is_error());
        result.is_error = Some(true);
        assert!(ToolOutcome::Complete(result).is_error());
        assert!(!ToolOutcome::InputRequired(InputRequired::default()).is_error());
    }

    #[test]
    fn the_questions_are_the_elicitations_messages() {
        let requests: InputRequests = serde_json::from_value(json!({
            "a": {"method": "elicitation/create", "params": {
                "message": "sure?",
                "requestedSchema": {"type": "object", "properties": {}}
            }},
            "b": {"method": "sampling/createMessage", "params": {
                "messages": [], "maxTokens": 10
            }}
        }))
        .unwrap();
        let asked = InputRequired {
            requests,
            ..InputRequired::default()
        };
        assert_eq!(asked.questions().collect::<Vec<_>>(), ["sure?"]);
    }
}
