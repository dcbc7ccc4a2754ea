//! A server's sampling and roots requests during a call, passed through
//! the endpoint: the reference server
//! (`@modelcontextprotocol/server-everything`) asks the client for a
//! sampling and for its roots, and the official TypeScript SDK client that
//! declared both answers them, its answers reaching the server as given.
//! A client session that declared neither has upstream sessions that
//! declare neither, so the server offers it no tool that would ask.

use serde_json::{Value, json};
use switchboard_test_support::{DbKind, db_tests};

use crate::{
    everything::everything_behind_the_endpoint,
    mcp_endpoint::{sdk_client, sdk_client_plan, step},
    support::member,
};

/// The text of a step's tool result.
fn text(out: &Value, i: usize) -> String {
    step(out, i)["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn a_servers_sampling_and_roots_requests_are_answered_by_the_client_whose_call_it_is(
    kind: DbKind,
) {
    let (_h, _everything, url) = everything_behind_the_endpoint(kind).await;
    let token = member("org-a");

    let asked = sdk_client_plan(json!({
        "url": url, "token": token,
        "sampling": { "role": "assistant", "model": "client-model", "stopReason": "endTurn",
                      "content": { "type": "text", "text": "forty-two" } },
        "roots": [{ "uri": "file:///work/project", "name": "project" }],
        "steps": [
            { "op": "callTool", "name": "trigger-sampling-request",
              "arguments": { "prompt": "the answer?", "maxTokens": 5 } },
            { "op": "callTool", "name": "get-roots-list" },
        ],
    }));
    let plain = sdk_client(
        &url,
        Some(&token),
        json!([
            { "op": "callTool", "name": "trigger-sampling-request",
              "arguments": { "prompt": "the answer?" } },
        ]),
    );
    let (asked, plain) = tokio::join!(asked, plain);

    assert!(
        text(&asked, 0).contains("forty-two") && text(&asked, 0).contains("client-model"),
        "the client's sampling reached the server: {asked}"
    );
    assert!(
        asked["samplings"][0]["messages"][0]["content"]["text"]
            .as_str()
            .is_some_and(|text| text.contains("the answer?")),
        "as the server asked it: {asked}"
    );
    assert!(
        text(&asked, 1).contains("file:///work/project"),
        "the client's roots reached the server: {asked}"
    );
    assert!(asked["rootsAsked"].as_u64() >= Some(1), "{asked}");

    let refused = &plain["steps"][0];
    let tool_error = refused["ok"]["isError"] == json!(true);
    assert!(
        tool_error || refused.get("error").is_some(),
        "a client that declared no sampling gets no sampling tool: {plain}"
    );
    assert_eq!(plain["samplings"], json!([]), "{plain}");
}

db_tests!(a_servers_sampling_and_roots_requests_are_answered_by_the_client_whose_call_it_is,);
