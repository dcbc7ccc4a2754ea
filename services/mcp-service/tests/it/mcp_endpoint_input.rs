//! A client's answers to a server's input requests (`inputResponses`, the
//! 2026-07-28 multi-round-trip requests) checked by the endpoint: `null`,
//! or an answer that is no result object, is a JSON-RPC invalid-params
//! error on that request, as the specification asks; well-formed answers
//! go on to the MCP server.

use serde_json::{Value, json};
use switchboard_test_support::{DbKind, db_tests};

use crate::{mcp_endpoint::setup_with, support::member};

/// A stateless `tools/call` of the example server's `echo` with
/// `responses` as its `inputResponses`.
fn call(id: i64, responses: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "echo", "arguments": { "text": "hi" },
            "inputResponses": responses,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "probe", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
}

async fn malformed_input_responses_are_an_invalid_params_error(kind: DbKind) {
    let e = setup_with(kind, |_| {}).await;
    let url = format!("http://{}/mcp/integrations/example", e.addr());
    let http = reqwest::Client::new();
    let send = |body: Value| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let response = http
                .post(url)
                .bearer_auth(member("org-a"))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "echo")
                .json(&body)
                .send()
                .await
                .expect("answers");
            (response.status(), response.text().await.expect("a body"))
        }
    };
    for (id, responses) in [
        (1, Value::Null),
        (2, json!({ "user_name": 12345 })),
        (3, json!(["accept"])),
    ] {
        let (status, body) = send(call(id, responses.clone())).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{body}");
        let answer: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(answer["id"], id, "{body}");
        assert_eq!(
            answer["error"]["code"], -32602,
            "{responses} is refused: {body}"
        );
    }
    // Well-formed answers reach the MCP server, which runs the call.
    let (status, body) = send(call(4, json!({ "ask": { "action": "decline" } }))).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert!(!body.contains("-32602"), "{body}");
    assert!(body.contains("hi"), "the call ran: {body}");
}

db_tests!(malformed_input_responses_are_an_invalid_params_error,);
