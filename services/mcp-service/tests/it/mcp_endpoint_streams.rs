//! The MCP endpoint's long-lived streams, spoken raw over HTTP: each
//! `subscriptions/listen` (2026-07-28) and each session's GET stream holds
//! a slot of its organization and of the process for as long as it is
//! open; one member cannot open more than the organization's cap, one
//! session no more GET streams than its own, and another organization is
//! still served while one is at its cap. A closed stream gives its slot
//! back.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_mcp_service::Config;
use switchboard_test_support::DbKind;

use crate::{
    mcp_endpoint::{Endpoint, setup_with},
    support::{admin, create, http_integration, member},
};

/// A generous bound on waits for something that happens promptly.
const PATIENCE: Duration = Duration::from_secs(30);
/// The JSON-RPC code of a request refused at a limit.
const LIMIT_CODE: i64 = -32000;

/// The endpoint with its stream caps set by `tune`, and `example` in
/// org-b as well as org-a.
async fn endpoint(tune: impl FnOnce(&mut Config)) -> (Endpoint, RunningHttpServer) {
    let mut e = setup_with(DbKind::Sqlite, tune).await;
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    create(
        &mut e.h,
        &admin("org-b"),
        http_integration("example", &upstream.url()),
    )
    .await;
    (e, upstream)
}

fn url(e: &Endpoint) -> String {
    format!("http://{}/mcp/integrations/example", e.addr())
}

/// A `subscriptions/listen` of `token`: the open stream (acknowledged), or
/// the JSON-RPC error refusing it.
async fn listen(e: &Endpoint, token: &str) -> Result<reqwest::Response, Value> {
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {
            "notifications": { "toolsListChanged": true },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "probe", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let mut response = reqwest::Client::new()
        .post(url(e))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&request)
        .send()
        .await
        .expect("answers");
    if response.status() != reqwest::StatusCode::OK {
        panic!(
            "listen answered {}: {}",
            response.status(),
            response.text().await.unwrap_or_default()
        );
    }
    let mut seen = String::new();
    loop {
        if let Some(error) = seen
            .lines()
            .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|message| message.get("error").cloned())
        {
            return Err(error);
        }
        if seen.contains("notifications/subscriptions/acknowledged") {
            return Ok(response);
        }
        let chunk = tokio::time::timeout(PATIENCE, response.chunk())
            .await
            .expect("the listen request is answered")
            .expect("a body")
            .unwrap_or_else(|| panic!("the stream ended with neither: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Asserts `error` is a refusal at a cap, for `reason`, saying when to
/// retry.
fn assert_refused(error: &Value, reason: &str) {
    assert_eq!(error["code"], LIMIT_CODE, "{error}");
    assert_eq!(error["data"]["reason"], reason, "{error}");
    assert!(
        error["data"]["retryAfterMs"]
            .as_u64()
            .is_some_and(|ms| ms > 0),
        "{error}"
    );
}

/// A listen stream of `token`, once a slot is free: a closed stream's slot
/// comes back when the server sees its client gone.
async fn listen_once_free(e: &Endpoint, token: &str) -> reqwest::Response {
    let started = Instant::now();
    loop {
        match listen(e, token).await {
            Ok(stream) => return stream,
            Err(_) if started.elapsed() < PATIENCE => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("no slot came back: {error}"),
        }
    }
}

/// A new session of `token` (initialize era), initialized: its id.
async fn session(e: &Endpoint, token: &str) -> String {
    let http = reqwest::Client::new();
    let opened = crate::mcp_endpoint::initialize_at(e, "example", token).await;
    assert_eq!(opened.status(), reqwest::StatusCode::OK);
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    let initialized = http
        .post(url(e))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .send()
        .await
        .expect("answers");
    assert!(
        initialized.status().is_success(),
        "{}",
        initialized.status()
    );
    id
}

/// A GET stream of session `id`: its response, whatever the status.
async fn get_stream(e: &Endpoint, token: &str, id: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(url(e))
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("answers")
}

#[tokio::test]
async fn one_member_holds_no_more_listen_streams_than_the_organizations_cap() {
    let (e, _upstream) = endpoint(|c| c.endpoint.max_streams_per_org = 3).await;
    let token = member("org-a");
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(listen(&e, &token).await.expect("within the cap"));
    }
    let error = listen(&e, &token).await.expect_err("a fourth stream");
    assert_refused(&error, "ERROR_REASON_RESOURCE_EXHAUSTED");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("organization has 3 MCP streams open")),
        "{error}"
    );
    // Closing a stream gives its slot back.
    drop(open.pop());
    open.push(listen_once_free(&e, &token).await);
    assert_eq!(open.len(), 3);
}

#[tokio::test]
async fn one_session_holds_no_more_get_streams_than_its_cap() {
    let (e, _upstream) = endpoint(|c| c.endpoint.max_streams_per_session = 2).await;
    let token = member("org-a");
    let id = session(&e, &token).await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let stream = get_stream(&e, &token, &id).await;
        assert_eq!(stream.status(), reqwest::StatusCode::OK);
        open.push(stream);
    }
    let over = get_stream(&e, &token, &id).await;
    assert_eq!(over.status(), reqwest::StatusCode::CONFLICT);
    assert!(over.headers().contains_key("retry-after"));
    let body: Value = over.json().await.expect("a JSON-RPC error");
    assert_refused(&body["error"], "ERROR_REASON_RESOURCE_EXHAUSTED");
    // Another session of the same caller has its own.
    let other = session(&e, &token).await;
    assert_eq!(
        get_stream(&e, &token, &other).await.status(),
        reqwest::StatusCode::OK
    );
    // Closing a stream gives its slot back.
    drop(open.pop());
    let started = Instant::now();
    loop {
        let again = get_stream(&e, &token, &id).await;
        if again.status() == reqwest::StatusCode::OK {
            break;
        }
        assert_eq!(again.status(), reqwest::StatusCode::CONFLICT);
        assert!(started.elapsed() < PATIENCE, "no slot came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn another_organization_is_served_while_one_is_at_its_cap() {
    let (e, _upstream) = endpoint(|c| c.endpoint.max_streams_per_org = 2).await;
    let a = member("org-a");
    let _held = [
        listen(&e, &a).await.expect("within the cap"),
        listen(&e, &a).await.expect("within the cap"),
    ];
    let error = listen(&e, &a).await.expect_err("past the cap");
    assert_refused(&error, "ERROR_REASON_RESOURCE_EXHAUSTED");
    let b = member("org-b");
    let id = tokio::time::timeout(PATIENCE, session(&e, &b))
        .await
        .expect("org-b's initialize is answered");
    assert!(!id.is_empty());
    let _listening = listen(&e, &b).await.expect("org-b listens");
    let stream = get_stream(&e, &b, &id).await;
    assert_eq!(stream.status(), reqwest::StatusCode::OK);
}

#[tokio::test]
async fn streams_count_against_the_process_cap() {
    let (e, _upstream) = endpoint(|c| {
        c.endpoint.max_streams = 3;
        c.endpoint.max_streams_per_org = 2;
    })
    .await;
    let (a, b) = (member("org-a"), member("org-b"));
    let _a = [
        listen(&e, &a).await.expect("within the caps"),
        listen(&e, &a).await.expect("within the caps"),
    ];
    let id = session(&e, &b).await;
    let get = get_stream(&e, &b, &id).await;
    assert_eq!(get.status(), reqwest::StatusCode::OK);
    let error = listen(&e, &b).await.expect_err("the process's fourth");
    assert_refused(&error, "ERROR_REASON_UNAVAILABLE");
    let over = get_stream(&e, &b, &id).await;
    assert_eq!(over.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
    assert!(over.headers().contains_key("retry-after"));
    // A GET stream's slot comes back when it closes.
    drop(get);
    let _again = listen_once_free(&e, &b).await;
}
