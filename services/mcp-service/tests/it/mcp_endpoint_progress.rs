//! A server's progress on a call, passed through the endpoint: the
//! reference server (`@modelcontextprotocol/server-everything`) reports the
//! steps of its long-running operation, and the official TypeScript SDK
//! client that asked for progress hears them under its own token; clients
//! choosing the same token on the same upstream server each hear only their
//! own call's, and a session that asked for nothing hears none.

use serde_json::{Value, json};
use switchboard_test_support::{DbKind, db_tests};

use crate::{
    everything::everything_behind_the_endpoint,
    mcp_endpoint::{sdk_client, step},
    support::member,
};

/// A long-running operation of `steps` steps, asking for progress.
fn long_call(steps: u32) -> Value {
    json!({ "op": "callTool", "name": "trigger-long-running-operation", "progress": true,
            "arguments": { "duration": f64::from(steps) * 0.3, "steps": steps } })
}

/// The progress a client heard, as (progress, total) pairs.
fn heard(out: &Value) -> Vec<(f64, f64)> {
    out["progress"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["progress"].as_f64().unwrap_or(-1.0),
                p["total"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect()
}

async fn a_calls_progress_reaches_its_client_under_its_own_token_and_no_other_session(
    kind: DbKind,
) {
    let (_h, _everything, url) = everything_behind_the_endpoint(kind).await;
    let token = member("org-a");

    // Both SDK clients give their call the same token (their request's
    // id); each must hear only the steps of its own call.
    let three = sdk_client(&url, Some(&token), json!([long_call(3)]));
    let two = sdk_client(&url, Some(&token), json!([long_call(2)]));
    let quiet = sdk_client(
        &url,
        Some(&token),
        json!([
            { "op": "callTool", "name": "trigger-long-running-operation",
              "arguments": { "duration": 0.6, "steps": 2 } },
            { "op": "sleep", "ms": 1000 },
        ]),
    );
    let (three, two, quiet) = tokio::join!(three, two, quiet);

    for out in [&three, &two, &quiet] {
        assert!(out["steps"][0].get("ok").is_some(), "the call ran: {out}");
        assert_eq!(out["strayProgress"], json!([]), "no stray progress: {out}");
    }
    assert!(
        step(&three, 0)["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Steps: 3")),
        "{three}"
    );
    assert_eq!(
        heard(&three),
        vec![(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)],
        "every step, under the client's token, before the result: {three}"
    );
    assert_eq!(heard(&two), vec![(1.0, 2.0), (2.0, 2.0)], "{two}");
    assert_eq!(
        quiet["progress"],
        json!([]),
        "a call that asked for no progress hears none: {quiet}"
    );
}

db_tests!(a_calls_progress_reaches_its_client_under_its_own_token_and_no_other_session,);
