//! What the integrations' servers send toward the MCP clients of the
//! endpoint, passed on to the official SDK clients: a server's list change
//! announced to its caller's session (and to no other organization's), and
//! a server's question answered by the client that made the call.

use std::net::SocketAddr;

use serde_json::{Value, json};
use switchboard_example_mcp_server::{
    CONFIRM_TOOL, EXTRA_TOOL, HttpServerOptions, RunningHttpServer, spawn_http,
};
use switchboard_test_support::{DbKind, db_tests, grpc::free_port};

use crate::{
    mcp_endpoint::{names, python_client, sdk_client, step},
    support::{Harness, admin, create, http_integration, member, start_with},
};

/// mcp-service with its endpoint on, and `upstream` as integration
/// `example` of each of `orgs`.
async fn endpoint_for(
    kind: DbKind,
    upstream: &RunningHttpServer,
    orgs: &[&str],
) -> (Harness, SocketAddr) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| config.endpoint.listen = Some(addr)).await;
    for org in orgs {
        create(
            &mut h,
            &admin(org),
            http_integration("example", &upstream.url()),
        )
        .await;
    }
    (h, addr)
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp/integrations/example")
}

async fn a_servers_list_change_reaches_its_callers_session_and_no_other_organizations(
    kind: DbKind,
) {
    // One server behind both organizations' integrations: it tells the
    // session whose call changed its list.
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let (_h, addr) = endpoint_for(kind, &upstream, &["org-a", "org-b"]).await;
    let (url, ours, theirs) = (url(addr), member("org-a"), member("org-b"));
    let changer = sdk_client(
        &url,
        Some(&ours),
        json!([
            { "op": "listTools" },
            // The other organization's client is connected by now.
            { "op": "sleep", "ms": 1000 },
            { "op": "callTool", "name": "add_tool" },
            { "op": "waitListChanged", "kind": "tools", "ms": 5000 },
            { "op": "listTools" },
        ]),
    );
    let bystander = sdk_client(
        &url,
        Some(&theirs),
        json!([
            { "op": "listTools" },
            { "op": "waitListChanged", "kind": "tools", "ms": 4000 },
        ]),
    );
    let (changer, bystander) = tokio::join!(changer, bystander);

    assert!(!names(&step(&changer, 0)["tools"]).contains(&EXTRA_TOOL.to_owned()));
    assert_eq!(
        step(&changer, 3)["heard"],
        true,
        "the caller's session hears of the change: {changer}"
    );
    assert!(
        names(&step(&changer, 4)["tools"]).contains(&EXTRA_TOOL.to_owned()),
        "and lists anew: {changer}"
    );
    assert_eq!(
        step(&bystander, 1)["heard"],
        false,
        "another organization's session hears nothing: {bystander}"
    );
    assert_eq!(bystander["listChanged"]["tools"], 0, "{bystander}");
}

/// A server that asks before it finishes ([`CONFIRM_TOOL`]), behind the
/// endpoint.
async fn confirming(kind: DbKind) -> (Harness, SocketAddr, RunningHttpServer) {
    let upstream = spawn_http(HttpServerOptions {
        stateful: false,
        confirm_tool: true,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let (h, addr) = endpoint_for(kind, &upstream, &["org-a"]).await;
    (h, addr, upstream)
}

fn confirm_step() -> Value {
    json!([{ "op": "callTool", "name": CONFIRM_TOOL, "arguments": { "action": "deploy" } }])
}

fn answer_text(out: &Value) -> String {
    step(out, 0)["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {out}"))
        .to_owned()
}

async fn a_servers_question_is_answered_by_the_sdk_client_that_made_the_call(kind: DbKind) {
    let (_h, addr, _upstream) = confirming(kind).await;
    let token = member("org-a");

    // The TypeScript SDK's client accepts; the server hears its answer.
    let answer = json!({ "action": "accept", "content": { "confirmed": true } });
    let out = sdk_client_answering(&url(addr), &token, &answer, confirm_step()).await;
    assert_eq!(answer_text(&out), "confirmed deploy", "{out}");
    assert_eq!(
        out["elicitations"][0]["message"], "Go ahead with deploy?",
        "the client was asked the server's question: {out}"
    );
    assert_eq!(
        step(&out, 0)["structuredContent"]["answer"],
        answer,
        "the server received the client's answer as it was given"
    );

    // The Python SDK's client (a session of the initialize era) answers
    // otherwise; the server hears that too.
    let mut out = python_client(&url(addr), Some(&token), "legacy", confirm_step()).await;
    assert_eq!(
        answer_text(&out),
        "declined deploy",
        "a client without elicitation gets the policy's decline: {out}"
    );
    let answer = json!({ "action": "accept", "content": { "confirmed": false } });
    out = python_answering(&url(addr), &token, &answer, confirm_step()).await;
    assert_eq!(answer_text(&out), "not confirmed deploy", "{out}");
    assert_eq!(out["elicitations"].as_array().map(Vec::len), Some(1));

    // A client that did not declare elicitation is not asked: the
    // operator's policy (decline) answers, as without the endpoint.
    let out = sdk_client(&url(addr), Some(&token), confirm_step()).await;
    assert_eq!(answer_text(&out), "declined deploy", "{out}");
}

/// The TypeScript SDK client answering every elicitation with `answer`.
async fn sdk_client_answering(url: &str, token: &str, answer: &Value, steps: Value) -> Value {
    crate::mcp_endpoint::sdk_client_with(url, Some(token), Some(answer), steps).await
}

/// The Python SDK client (initialize era) answering every elicitation with
/// `answer`.
async fn python_answering(url: &str, token: &str, answer: &Value, steps: Value) -> Value {
    crate::mcp_endpoint::python_client_with(url, Some(token), "legacy", Some(answer), steps).await
}

db_tests!(
    a_servers_list_change_reaches_its_callers_session_and_no_other_organizations,
    a_servers_question_is_answered_by_the_sdk_client_that_made_the_call,
);
