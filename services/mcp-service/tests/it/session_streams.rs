//! A call does not depend on which of a session's streams the server writes
//! to: a server of the initialize era that sends its elicitation, or the
//! answer to a pending call, on the session's standalone GET stream is
//! served the same whether that GET reaches it early or late; and a server
//! of 2026-07-28 answering `server/discover` late is still reached with it.

use std::time::Duration;

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_mcp_service::ElicitationPolicy;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, content_block::Block},
};
use switchboard_test_support::{DbKind, db_tests};

use crate::{
    scripted_server::{Script, Scripted, delaying_discover_proxy},
    support::{Harness, admin, create, http_integration, req, start_with},
};

/// How late the standalone GET reaches the server: later than the call's
/// POST, sooner than the call's stream is resumed.
const LATE: Duration = Duration::from_millis(300);

/// Longer than any of these calls takes when it works.
const DEADLINE: Duration = Duration::from_secs(8);

async fn harness(kind: DbKind, wait: Option<Duration>) -> Harness {
    start_with(kind, |config| {
        config.elicitation = ElicitationPolicy::Defaults;
        if let Some(wait) = wait {
            config.standalone_stream_wait = wait;
        }
    })
    .await
}

/// ExecuteTool of the scripted server's tool on a session of its own.
async fn call(h: &mut Harness, server: &Scripted) -> Result<Vec<String>, tonic::Status> {
    call_tool(h, &server.url, "ask", json!({})).await
}

async fn call_tool(
    h: &mut Harness,
    url: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<Vec<String>, tonic::Status> {
    let token = admin("org-a");
    let id = create(h, &token, http_integration("scripted", url))
        .await
        .id;
    let mut request = req(
        pb::ExecuteToolRequest {
            integration_id: id,
            tool_name: tool.into(),
            arguments: json_to_struct(&arguments),
            session_scope: "thread".into(),
            ..Default::default()
        },
        &token,
    );
    request.set_timeout(DEADLINE);
    let response = h.client.execute_tool(request).await?.into_inner();
    Ok(response
        .content
        .iter()
        .filter_map(|block| match &block.block {
            Some(Block::Text(text)) => Some(text.text.clone()),
            _ => None,
        })
        .collect())
}

async fn an_elicitation_on_a_late_standalone_stream_is_answered(kind: DbKind) {
    let mut h = harness(kind, None).await;
    let server = Scripted::start(Script::ElicitOnStandalone, Some(LATE)).await;
    let texts = call(&mut h, &server).await;
    let log = server.log();
    assert_eq!(
        texts.expect("the call is answered, not left to its deadline"),
        [r#""accept" "Ada""#],
        "{log:?}"
    );
    assert!(log.contains(&"elicitation sent".to_owned()), "{log:?}");
}

async fn an_answer_for_the_next_get_reaches_the_calls_resumed_stream(kind: DbKind) {
    let mut h = harness(kind, None).await;
    let server = Scripted::start(Script::AnswerOnNextGet, Some(LATE)).await;
    let texts = call(&mut h, &server).await;
    let log = server.log();
    assert_eq!(
        texts.expect("the call is answered"),
        ["answered on a GET"],
        "{log:?}"
    );
    assert!(
        log.contains(&"answer on resumption GET".to_owned()),
        "the call's own stream was not resumed for its answer: {log:?}"
    );
}

async fn a_standalone_stream_never_answered_holds_a_session_only_for_the_wait(kind: DbKind) {
    let wait = Duration::from_millis(200);
    let mut h = harness(kind, Some(wait)).await;
    let server = Scripted::start(Script::AnswerOnNextGet, None).await;
    let texts = call(&mut h, &server).await;
    let log = server.log();
    assert_eq!(
        texts.expect("the call goes ahead after the wait"),
        ["answered on a GET"],
        "{log:?}"
    );
    assert!(
        log.contains(&"answer on resumption GET".to_owned()),
        "{log:?}"
    );
}

/// Later than rmcp's own fallback from `server/discover` (10 s).
const LATE_DISCOVER: Duration = Duration::from_secs(11);

async fn a_modern_server_answering_discover_late_is_not_taken_for_an_earlier_one(kind: DbKind) {
    let mut h = start_with(kind, |config| {
        config.connect_timeout = Duration::from_secs(40);
        config.call_timeout = Duration::from_secs(50);
    })
    .await;
    let upstream = spawn_http(HttpServerOptions {
        stateful: false,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let url = delaying_discover_proxy(&upstream.url(), LATE_DISCOVER).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("late", &url))
        .await
        .id;
    let mut request = req(
        pb::ExecuteToolRequest {
            integration_id: id,
            tool_name: "echo".into(),
            arguments: json_to_struct(&json!({"text": "late"})),
            session_scope: "thread".into(),
            ..Default::default()
        },
        &token,
    );
    request.set_timeout(Duration::from_secs(60));
    let response = h
        .client
        .execute_tool(request)
        .await
        .expect("reached with server/discover")
        .into_inner();
    assert!(!response.is_error, "{}", response.error_message);
}

db_tests!(
    a_modern_server_answering_discover_late_is_not_taken_for_an_earlier_one,
    an_elicitation_on_a_late_standalone_stream_is_answered,
    an_answer_for_the_next_get_reaches_the_calls_resumed_stream,
    a_standalone_stream_never_answered_holds_a_session_only_for_the_wait,
);
