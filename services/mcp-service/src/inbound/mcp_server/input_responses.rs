//! A request's `inputResponses` (the answers a 2026-07-28 client gives to
//! a server's `input_required` result) checked before the MCP server reads
//! the request: they are an object of results (each an object) by the keys
//! of the server's input requests. Anything else, `null` included, is a
//! protocol error, answered with JSON-RPC `-32602` (invalid params) as the
//! specification asks; the SDK's own parsing would take `null` for "no
//! answers" and a number for an answer.
//!
//! The body is read once, within the endpoint's body limit (past it the
//! request gets `413`, as the MCP server itself would answer), and looked
//! into only when it names `inputResponses` at all.

use axum::{
    body::Body,
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse as _, Response},
};
use http::{Method, StatusCode, header};
use serde_json::{Value, json};

/// The key looked for before a body is parsed.
const KEY: &[u8] = b"\"inputResponses\"";

/// Passes a POST on to the MCP server unless its `inputResponses` are
/// malformed; `limit` is the endpoint's body limit.
pub(super) async fn check(State(limit): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    if let Some(refusal) = refusal(&bytes) {
        return refusal;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The JSON-RPC error answering `body`, when it is a request whose
/// `inputResponses` are malformed.
fn refusal(body: &[u8]) -> Option<Response> {
    // Most requests carry no answers: they are not parsed twice.
    if !body.windows(KEY.len()).any(|window| window == KEY) {
        return None;
    }
    // A body that is no JSON is the MCP server's to refuse.
    let message: Value = serde_json::from_slice(body).ok()?;
    let problem = problem(&message)?;
    tracing::debug!(problem, "malformed input responses refused");
    let error = json!({
        "jsonrpc": "2.0",
        "id": message.get("id").cloned().unwrap_or(Value::Null),
        "error": { "code": -32602, "message": problem },
    });
    Some(
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            error.to_string(),
        )
            .into_response(),
    )
}

/// What is wrong with the `inputResponses` of the JSON-RPC request
/// `message`, if it has any and something is.
fn problem(message: &Value) -> Option<String> {
    message.get("method")?;
    let responses = message.get("params")?.get("inputResponses")?;
    let Value::Object(responses) = responses else {
        return Some(
            "inputResponses must be an object of results, by the keys of the server's input requests"
                .to_owned(),
        );
    };
    responses
        .iter()
        .find(|(_, response)| !response.is_object())
        .map(|(key, _)| format!("inputResponses[{key}] must be a result object"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn call(responses: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "t", "arguments": {}, "inputResponses": responses}})
    }

    #[test]
    fn null_a_number_or_a_list_of_answers_is_a_problem_and_results_are_not() {
        assert!(problem(&call(Value::Null)).is_some());
        assert!(problem(&call(json!([]))).is_some());
        assert_eq!(
            problem(&call(json!({"user_name": 12345}))).as_deref(),
            Some("inputResponses[user_name] must be a result object")
        );
        assert_eq!(problem(&call(json!({"ask": {"action": "decline"}}))), None);
        assert_eq!(problem(&call(json!({}))), None);
        // A notification or a result is no request of the kind.
        assert_eq!(problem(&json!({"result": {"inputResponses": null}})), None);
    }

    #[test]
    fn only_a_body_naming_the_key_is_parsed_and_a_refusal_keeps_the_id() {
        assert!(refusal(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}").is_none());
        assert!(refusal(b"not json \"inputResponses\"").is_none());
        let refused = refusal(call(Value::Null).to_string().as_bytes()).expect("refused");
        assert_eq!(refused.status(), StatusCode::OK);
    }
}
