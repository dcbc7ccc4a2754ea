//! The reference server (`@modelcontextprotocol/server-everything`) behind
//! the endpoint, reached by the official TypeScript SDK client: what a
//! client session asks of its own upstream session (the logging level,
//! resource subscriptions, completions) is passed on over that session, and what the
//! server tells that session (its log messages, its resource updates)
//! reaches that client session, and no other organization's.

use std::net::SocketAddr;

use serde_json::{Value, json};
use switchboard_test_support::{DbKind, db_tests, grpc::free_port};

use crate::{
    everything::start_http_everything,
    mcp_endpoint::{sdk_client, step},
    support::{admin, create, http_integration, member, start_with},
};

/// A resource of the reference server's.
const DOCUMENT: &str = "demo://resource/dynamic/text/1";

fn ok(out: &Value, i: usize) -> &Value {
    let result = &out["steps"][i];
    assert!(result.get("ok").is_some(), "step {i} failed: {out}");
    step(out, i)
}

fn logs_mentioning<'a>(out: &'a Value, text: &str) -> Vec<&'a Value> {
    out["logs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|log| log["data"].as_str().is_some_and(|data| data.contains(text)))
        .collect()
}

async fn a_client_sessions_level_and_subscriptions_reach_its_upstream_session_and_its_notices_come_back(
    kind: DbKind,
) {
    let (_everything, upstream) = start_http_everything();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| config.endpoint.listen = Some(addr)).await;
    for org in ["org-a", "org-b"] {
        create(
            &mut h,
            &admin(org),
            http_integration("everything", &upstream),
        )
        .await;
    }
    let url = format!("http://{addr}/mcp/integrations/everything");
    let (ours, theirs) = (member("org-a"), member("org-b"));

    let subscriber = sdk_client(
        &url,
        Some(&ours),
        json!([
            { "op": "setLevel", "level": "debug" },
            // The server acknowledges a subscription with a log message to
            // the session that made it.
            { "op": "subscribe", "uri": DOCUMENT },
            { "op": "waitNotice", "kind": "logs", "ms": 5000 },
            // Updates of the subscribed resource, on the same session.
            { "op": "callTool", "name": "toggle-subscriber-updates" },
            { "op": "waitNotice", "kind": "updated", "ms": 5000 },
            { "op": "unsubscribe", "uri": DOCUMENT },
            { "op": "waitNotice", "kind": "logs", "seen": 1, "ms": 5000 },
            // A prompt argument's completion, by the server.
            { "op": "complete",
              "ref": { "type": "ref/prompt", "name": "completable-prompt" },
              "argument": { "name": "department", "value": "S" } },
        ]),
    );
    let bystander = sdk_client(
        &url,
        Some(&theirs),
        json!([
            { "op": "setLevel", "level": "debug" },
            { "op": "listResources" },
            { "op": "waitNotice", "kind": "updated", "ms": 4000 },
        ]),
    );
    let (subscriber, bystander) = tokio::join!(subscriber, bystander);

    for i in [0, 1, 3, 5] {
        ok(&subscriber, i);
    }
    assert_eq!(
        ok(&subscriber, 2)["heard"],
        true,
        "the subscribing session hears the server's log message: {subscriber}"
    );
    assert_eq!(
        logs_mentioning(
            &subscriber,
            &format!("Subscribe Resource request for URI: {DOCUMENT}")
        )
        .len(),
        1,
        "{subscriber}"
    );
    assert_eq!(
        ok(&subscriber, 4)["heard"],
        true,
        "and the resource's updates: {subscriber}"
    );
    assert_eq!(subscriber["updated"][0], DOCUMENT, "{subscriber}");
    assert_eq!(
        logs_mentioning(&subscriber, "Unsubscribe Resource request").len(),
        1,
        "the unsubscription reached the same upstream session: {subscriber}"
    );
    assert_eq!(
        ok(&subscriber, 7)["completion"]["values"],
        json!(["Sales", "Support"]),
        "{subscriber}"
    );

    ok(&bystander, 0);
    assert_eq!(
        ok(&bystander, 2)["heard"],
        false,
        "another organization's session hears no update: {bystander}"
    );
    assert!(
        logs_mentioning(&bystander, "Subscribe Resource request").is_empty(),
        "nor the other session's log messages: {bystander}"
    );
}

db_tests!(
    a_client_sessions_level_and_subscriptions_reach_its_upstream_session_and_its_notices_come_back,
);
