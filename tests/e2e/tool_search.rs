//! Tool search through a run: an agent of 20 integrations and 300 tools
//! (the labelled catalog of runs-service's search tests, each integration
//! a real MCP server) is offered `search_tools` and `call_tool` instead;
//! the search finds the tool a request needs first, a tool a policy denies
//! is never found, a found tool called by name reaches its own server, and
//! the run's first model request is measured against the full list.

use std::collections::BTreeMap;

use prost_types::FieldMask;
use serde_json::{Value, json};
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::{
    mcp::v1::{self as mcp, policy_service_client::PolicyServiceClient},
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;

use crate::world::{
    Options, World, create_integration, create_thread, final_run, tool_messages_sent,
    tools_offered, world,
};

/// The catalog's tools, by integration slug.
fn catalog() -> BTreeMap<String, Vec<Value>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../services/runs-service/tests/data/tool_catalog.json"
    );
    let catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the catalog")).expect("JSON");
    let mut by_slug: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for tool in catalog["tools"].as_array().expect("tools") {
        by_slug
            .entry(tool["integration"].as_str().expect("slug").to_owned())
            .or_default()
            .push(json!({
                "name": tool["name"],
                "description": tool["description"],
                "inputSchema": tool["inputSchema"],
            }));
    }
    by_slug
}

/// One MCP server and integration per slug of the catalog; the agent uses
/// them all, and only them.
async fn serve_catalog(w: &mut World) -> BTreeMap<String, RunningHttpServer> {
    let mut servers = BTreeMap::new();
    let mut ids = Vec::new();
    for (slug, tools) in catalog() {
        let server = spawn_http(HttpServerOptions {
            catalog: tools,
            ..HttpServerOptions::default()
        })
        .await
        .expect("a catalog server");
        ids.push(create_integration(&mut w.mcp_client, &w.token, &slug, &server.url(), None).await);
        servers.insert(slug, server);
    }
    w.set_integrations(ids).await;
    servers
}

/// Denies the tool `name` to every caller of the organization.
async fn deny(w: &World, name: &str) {
    PolicyServiceClient::connect(w._mcp.url())
        .await
        .expect("connects")
        .put_policy(authed(
            mcp::PutPolicyRequest {
                policy: Some(mcp::Policy {
                    name: "no-refunds".into(),
                    rules: vec![mcp::PolicyRule {
                        name: "deny-refunds".into(),
                        condition: format!("request.kind == 'tool' && tool.name == '{name}'"),
                        effect: mcp::PolicyEffect::Deny.into(),
                        reason: "refunds go through finance".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &w.token,
        ))
        .await
        .expect("policy written");
}

/// The names a `search_tools` result lists, best first.
fn found(result: &str) -> Vec<String> {
    let result: Value = serde_json::from_str(result).expect("a JSON result");
    result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// Tokens of model request `index` as sent (its whole JSON body), counted
/// with the `o200k_base` encoding of OpenAI's current models.
fn request_tokens(w: &World, index: usize) -> usize {
    let body = w.model.requests()[index].to_string();
    tiktoken_rs::o200k_base()
        .expect("the encoding")
        .encode_ordinary(&body)
        .len()
}

#[tokio::test]
async fn a_model_finds_and_calls_one_of_300_tools_and_its_first_request_is_a_fraction() {
    let call =
        json!({ "name": "pagerduty__who_is_on_call", "arguments": { "schedule": "primary" } });
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![
                ScriptedToolCall::new(
                    "s1",
                    "search_tools",
                    r#"{"query":"who is on call right now"}"#,
                ),
                ScriptedToolCall::new(
                    "s2",
                    "search_tools",
                    r#"{"query":"refund the customer's payment","limit":20}"#,
                ),
            ]),
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "call_tool",
                call.to_string(),
            )]),
            Turn::FromToolResults("{last_tool_result}".into()),
            // The same request to the agent without tool search.
            Turn::Text("done".into()),
        ],
        agent: Box::new(|agent| agent.tool_search = true),
        ..Options::default()
    })
    .await;
    let servers = serve_catalog(&mut w).await;
    deny(&w, "refund_payment").await;

    let events = w.say("who is on call right now?").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let offered = tools_offered(&w.model, 0);
    for tool in ["search_tools", "call_tool"] {
        assert!(offered.contains(&tool.to_owned()), "{offered:?}");
    }
    assert!(
        offered.iter().all(|name| !name.contains("__")),
        "no MCP tool is offered itself: {offered:?}"
    );

    let results = tool_messages_sent(&w.model, 1);
    let on_call = found(&results[0]);
    assert_eq!(on_call[0], "pagerduty__who_is_on_call", "{on_call:?}");
    let refunds = found(&results[1]);
    assert!(!refunds.is_empty(), "other payment tools are found");
    assert!(
        !refunds.contains(&"stripe__refund_payment".to_owned()),
        "a denied tool is never found: {refunds:?}"
    );

    // The found tool, called by name, reaches its own server only.
    let sent = tool_messages_sent(&w.model, 2);
    let answer = sent.last().expect("the call's result");
    assert_eq!(
        answer,
        r#"who_is_on_call called with {"schedule":"primary"}"#
    );
    for (slug, server) in &servers {
        let calls = server.stats.snapshot().tool_calls;
        assert_eq!(calls, u64::from(slug == "pagerduty"), "{slug}");
    }

    // The same first request with every tool offered, in a new thread.
    w.runs_client
        .update_agent(authed(
            runs::UpdateAgentRequest {
                agent: Some(runs::Agent {
                    id: w.agent_id.clone(),
                    tool_search: false,
                    ..Default::default()
                }),
                update_mask: Some(FieldMask {
                    paths: vec!["tool_search".into()],
                }),
            },
            &w.token,
        ))
        .await
        .expect("agent updated");
    w.thread_id = create_thread(&mut w.runs_client, &w.token, w.agent_id.clone()).await;
    w.say("who is on call right now?").await;
    // 299 tools: the denied one is not offered either.
    assert_eq!(
        tools_offered(&w.model, 3)
            .iter()
            .filter(|n| n.contains("__"))
            .count(),
        299
    );
    let (searched, full) = (request_tokens(&w, 0), request_tokens(&w, 3));
    println!("first request: {searched} tokens with tool search, {full} with every tool");
    assert!(
        searched * 5 <= full,
        "tool search cuts the first request by at least 80 %: {searched} against {full}"
    );
}
