//! The organization's limits on the MCP endpoint, driven by the official
//! TypeScript SDK's client: `tools/call`, `resources/read` and
//! `prompts/get` count against the same calls in flight and calls per
//! second as the organization's gRPC calls, and a refusal is a JSON-RPC
//! error on that request, saying why and when to retry, that leaves the
//! client's session usable.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_proto::mcp::v1::mcp_service_client::McpServiceClient;
use switchboard_test_support::{DbKind, db_tests};
use tonic::{Code, transport::Channel};
use tonic_types::StatusExt as _;

use crate::{
    hostile_server::execute,
    mcp_endpoint::{Endpoint, setup_with, step},
    support::member,
};

/// A generous bound on waits for something that happens promptly.
const PATIENCE: Duration = Duration::from_secs(30);
/// The JSON-RPC code of a request refused at a limit.
const LIMIT_CODE: i64 = -32000;
const CONCURRENCY_REASON: &str = "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT";
const RATE_REASON: &str = "ERROR_REASON_ORGANIZATION_RATE_LIMIT";

/// The endpoint of an organization allowed one call in flight, a call at
/// the limit waiting a short while for it.
async fn one_call_at_a_time(kind: DbKind) -> Endpoint {
    setup_with(kind, |c| {
        c.common.server.org_concurrency_limit = 1;
        c.common.server.org_queue_wait = Duration::from_millis(300);
    })
    .await
}

/// The refusal a step of the client's report holds, asserted to be at the
/// limit `reason` names; its retry delay in milliseconds.
fn refusal(out: &Value, i: usize, reason: &str) -> u64 {
    let error = &out["steps"][i]["error"];
    assert_eq!(error["code"], LIMIT_CODE, "step {i}: {out}");
    assert_eq!(error["data"]["reason"], reason, "step {i}: {out}");
    error["data"]["retryAfterMs"]
        .as_u64()
        .filter(|ms| *ms > 0)
        .unwrap_or_else(|| panic!("step {i} says when to retry: {out}"))
}

async fn calls_reads_and_prompts_wait_behind_the_organizations_grpc_calls(kind: DbKind) {
    let e = one_call_at_a_time(kind).await;
    let token = member("org-a");
    let mut client = e.h.client.clone();
    let held = execute(&e.id, "sleep", json!({"ms": 6000}), &token);
    let grpc = tokio::spawn(async move { client.execute_tool(held).await });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let out = e
        .client(
            "example",
            Some(&token),
            json!([
                { "op": "listTools" },
                { "op": "callTool", "name": "echo", "arguments": { "text": "x" } },
                { "op": "readResource", "uri": "docs://readme" },
                { "op": "getPrompt", "name": "summarize", "arguments": { "topic": "x" } },
            ]),
        )
        .await;
    assert_eq!(out["connected"], true, "{out}");
    step(&out, 0);
    for i in 1..4 {
        assert!(refusal(&out, i, CONCURRENCY_REASON) <= 1000, "{out}");
    }
    assert!(
        out["steps"][1]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("calls in flight")),
        "{out}"
    );
    let done = tokio::time::timeout(PATIENCE, grpc)
        .await
        .expect("the gRPC call ends")
        .expect("joined")
        .expect("the gRPC call is served");
    assert!(!done.into_inner().is_error);
}

async fn grpc_calls_wait_behind_the_endpoints_tool_calls(kind: DbKind) {
    let e = one_call_at_a_time(kind).await;
    let token = member("org-a");
    let url = format!("http://{}/mcp/integrations/example", e.addr());
    let plan = json!([{ "op": "callTool", "name": "sleep", "arguments": { "ms": 6000 } }]);
    let mcp = tokio::spawn({
        let token = token.clone();
        async move { crate::mcp_endpoint::sdk_client(&url, Some(&token), plan).await }
    });

    let status = refused_grpc_call(e.h.client.clone(), &e.id, &token).await;
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        status
            .get_error_details()
            .error_info()
            .expect("an ErrorInfo detail")
            .reason,
        CONCURRENCY_REASON
    );
    let out = tokio::time::timeout(PATIENCE, mcp)
        .await
        .expect("the client ends")
        .expect("joined");
    assert_eq!(step(&out, 0)["content"][0]["text"], "slept 6000ms", "{out}");
}

/// Calls `echo` over gRPC until one is refused (the endpoint's call took
/// the organization's slot), within [`PATIENCE`].
async fn refused_grpc_call(
    mut client: McpServiceClient<Channel>,
    id: &str,
    token: &str,
) -> tonic::Status {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match client
            .execute_tool(execute(id, "echo", json!({"text": "x"}), token))
            .await
        {
            Err(status) => return status,
            Ok(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(_) => panic!("no gRPC call was refused while the endpoint's call ran"),
        }
    }
}

async fn tool_calls_past_the_organizations_rate_are_refused_and_the_session_goes_on(kind: DbKind) {
    let e = setup_with(kind, |c| {
        c.common.server.org_rate_limit = std::num::NonZeroU32::MIN;
        c.common.server.org_rate_burst = std::num::NonZeroU32::new(2).expect("2");
        c.common.server.org_rate_grant_batch = 1;
        c.common.server.org_rate_refusal_hold = Duration::ZERO;
    })
    .await;
    let calls: Vec<Value> = (0..6)
        .map(|_| json!({ "op": "callTool", "name": "echo", "arguments": { "text": "x" } }))
        .chain([json!({ "op": "listTools" })])
        .collect();
    let out = e
        .client("example", Some(&member("org-a")), Value::Array(calls))
        .await;
    assert_eq!(out["connected"], true, "{out}");
    step(&out, 0);
    let refused: Vec<u64> = (1..6)
        .filter(|i| out["steps"][*i].get("error").is_some())
        .map(|i| refusal(&out, i, RATE_REASON))
        .collect();
    assert!(
        !refused.is_empty(),
        "a call past the rate is refused: {out}"
    );
    assert!(refused.iter().all(|ms| *ms <= 1000), "{out}");
    assert!(
        step(&out, 6)["tools"].is_array(),
        "the session goes on after a refusal: {out}"
    );
}

db_tests!(
    calls_reads_and_prompts_wait_behind_the_organizations_grpc_calls,
    grpc_calls_wait_behind_the_endpoints_tool_calls,
    tool_calls_past_the_organizations_rate_are_refused_and_the_session_goes_on,
);
