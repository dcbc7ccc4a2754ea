use std::{collections::BTreeSet, sync::Arc};

use rmcp::{
    ClientHandler, RoleClient,
    model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, ContentBlock, ErrorCode,
        ResourceContents,
    },
    service::{NotificationContext, PeerRequestOptions},
};
use serde_json::json;
use switchboard_example_mcp_server::{
    EXTRA_TOOL, StatsSnapshot, TASK_BIG_TOOL, TASK_CONFIRM_TOOL, TASK_FAIL_TOOL, TASK_SLEEP_TOOL,
    TOOLS_PAGE_SIZE, data,
};
use tokio::sync::Notify;

use crate::common::{
    PATIENCE, args, call, connect, connect_with, eventually, mcp_error, only_text, start_server,
    try_call,
};

const ALL_TOOLS: [&str; 10] = [
    "add", "add_tool", "big", "counter", "echo", "fail", "mixed", "process", "sleep", "stats",
];

#[tokio::test]
async fn tools_are_listed_across_pages() {
    let server = start_server().await;
    let client = connect(&server).await;

    let first = client.list_tools(None).await.expect("first page");
    assert_eq!(first.tools.len(), TOOLS_PAGE_SIZE);
    assert!(first.next_cursor.is_some(), "more pages follow");

    let all = client.list_all_tools().await.expect("every page");
    let names: BTreeSet<&str> = all.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(all.len(), 10);
    assert_eq!(names, BTreeSet::from(ALL_TOOLS));

    server.shutdown().await;
}

#[tokio::test]
async fn echo_returns_the_text() {
    let server = start_server().await;
    let client = connect(&server).await;

    let result = call(&client, "echo", json!({ "text": "hello" })).await;
    assert_eq!(only_text(&result), "hello");
    assert_ne!(result.is_error, Some(true));

    server.shutdown().await;
}

#[tokio::test]
async fn add_returns_the_sum_as_text_and_structured_content() {
    let server = start_server().await;
    let client = connect(&server).await;

    let tools = client.list_all_tools().await.expect("tools");
    let add = tools
        .iter()
        .find(|tool| tool.name == "add")
        .expect("add is listed");
    assert!(add.output_schema.is_some(), "add declares an output schema");

    let result = call(&client, "add", json!({ "a": 2, "b": 3.5 })).await;
    assert_eq!(only_text(&result), "5.5");
    assert_eq!(result.structured_content, Some(json!({ "sum": 5.5 })));

    server.shutdown().await;
}

#[tokio::test]
async fn fail_returns_a_tool_error_with_the_message() {
    let server = start_server().await;
    let client = connect(&server).await;

    let result = call(&client, "fail", json!({ "message": "it broke" })).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(only_text(&result), "it broke");

    server.shutdown().await;
}

#[tokio::test]
async fn mixed_returns_one_block_of_each_content_kind() {
    let server = start_server().await;
    let client = connect(&server).await;

    let result = call(&client, "mixed", json!({})).await;
    let [text, image, audio, resource, link] = result.content.as_slice() else {
        panic!("five content blocks: {:?}", result.content);
    };
    assert!(matches!(text, ContentBlock::Text(_)));
    let ContentBlock::Image(image) = image else {
        panic!("second block is an image: {image:?}");
    };
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(image.data, data::base64(data::PNG_BYTES));
    let ContentBlock::Audio(audio) = audio else {
        panic!("third block is audio: {audio:?}");
    };
    assert_eq!(audio.mime_type, "audio/wav");
    assert_eq!(audio.data, data::base64(data::WAV_BYTES));
    let ContentBlock::Resource(resource) = resource else {
        panic!("fourth block is an embedded resource: {resource:?}");
    };
    let ResourceContents::TextResourceContents { uri, text, .. } = &resource.resource else {
        panic!("the embedded resource is text: {resource:?}");
    };
    assert_eq!(uri, "docs://embedded");
    assert_eq!(text, data::EMBEDDED_TEXT);
    let ContentBlock::ResourceLink(link) = link else {
        panic!("fifth block is a resource link: {link:?}");
    };
    assert_eq!(link.uri, "data://sales.csv");

    server.shutdown().await;
}

#[tokio::test]
async fn big_returns_exactly_the_requested_number_of_bytes() {
    let server = start_server().await;
    let client = connect(&server).await;

    let result = call(&client, "big", json!({ "bytes": 100_000 })).await;
    let text = only_text(&result);
    assert_eq!(text.len(), 100_000);
    assert!(text.bytes().all(|byte| byte == b'x'));

    server.shutdown().await;
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_invalid_params_errors() {
    let server = start_server().await;
    let client = connect(&server).await;

    let unknown = try_call(&client, "nope", json!({}))
        .await
        .expect_err("unknown tool");
    assert_eq!(mcp_error(unknown).code, ErrorCode::INVALID_PARAMS);
    let bad = try_call(&client, "echo", json!({ "text": 1 }))
        .await
        .expect_err("text must be a string");
    assert_eq!(mcp_error(bad).code, ErrorCode::INVALID_PARAMS);

    server.shutdown().await;
}

#[tokio::test]
async fn task_tools_answer_only_a_client_that_declares_tasks() {
    let server = start_server().await;
    let client = connect(&server).await;

    for tool in [
        TASK_SLEEP_TOOL,
        TASK_BIG_TOOL,
        TASK_FAIL_TOOL,
        TASK_CONFIRM_TOOL,
    ] {
        let refused = try_call(
            &client,
            tool,
            json!({ "ms": 1, "message": "m", "action": "a" }),
        )
        .await
        .expect_err("a client without the tasks extension gets no task");
        let refused = mcp_error(refused);
        assert_eq!(refused.code, ErrorCode::INVALID_REQUEST, "{tool}");
        assert!(refused.message.contains("tasks extension"), "{refused:?}");
    }
    assert_eq!(server.stats.snapshot().task_cancels, 0);

    server.shutdown().await;
}

#[tokio::test]
async fn sleep_completes_when_not_cancelled() {
    let server = start_server().await;
    let client = connect(&server).await;

    let result = call(&client, "sleep", json!({ "ms": 20 })).await;
    assert_eq!(only_text(&result), "slept 20ms");
    assert_eq!(server.stats.snapshot().cancellations, 0);

    server.shutdown().await;
}

#[tokio::test]
async fn cancelled_sleep_stops_early_and_is_counted() {
    let server = start_server().await;
    let client = connect(&server).await;

    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("sleep").with_arguments(args(json!({ "ms": 60_000 }))),
    ));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("the call is sent");
    let stats = Arc::clone(&server.stats);
    eventually("the server is running the call", || {
        stats.snapshot().tool_calls == 1
    })
    .await;
    handle
        .cancel(Some("test cancels".into()))
        .await
        .expect("the cancellation is sent");
    eventually("the server counts the cancellation", || {
        stats.snapshot().cancellations == 1
    })
    .await;

    // The session stays usable after a cancelled call.
    let result = call(&client, "echo", json!({ "text": "still here" })).await;
    assert_eq!(only_text(&result), "still here");

    server.shutdown().await;
}

#[tokio::test]
async fn dropping_the_call_future_cancels_sleep() {
    let server = start_server().await;
    let client = connect(&server).await;

    let stats = Arc::clone(&server.stats);
    let sleeping = call(&client, "sleep", json!({ "ms": 60_000 }));
    let timed_out = tokio::time::timeout(std::time::Duration::from_millis(300), sleeping).await;
    assert!(timed_out.is_err(), "the sleep outlasts the timeout");
    eventually("the server counts the cancellation", || {
        stats.snapshot().cancellations == 1
    })
    .await;

    server.shutdown().await;
}

/// Signals each `notifications/tools/list_changed` it receives.
#[derive(Debug, Clone, Default)]
struct ToolListWatcher {
    changed: Arc<Notify>,
}

impl ClientHandler for ToolListWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

#[tokio::test]
async fn add_tool_notifies_the_client_and_lists_the_extra_tool() {
    let server = start_server().await;
    let watcher = ToolListWatcher::default();
    let changed = Arc::clone(&watcher.changed);
    let client = connect_with(&server, watcher).await;

    assert_eq!(client.list_all_tools().await.expect("tools").len(), 10);
    let result = call(&client, "add_tool", json!({})).await;
    assert_ne!(result.is_error, Some(true));
    tokio::time::timeout(PATIENCE, changed.notified())
        .await
        .expect("the client receives tools/list_changed");

    let tools = client.list_all_tools().await.expect("tools");
    assert_eq!(tools.len(), 11);
    assert!(tools.iter().any(|tool| tool.name == EXTRA_TOOL));
    let result = call(&client, EXTRA_TOOL, json!({})).await;
    assert_eq!(only_text(&result), "extra tool called");

    server.shutdown().await;
}

#[tokio::test]
async fn stats_tool_reports_the_server_counters() {
    let server = start_server().await;
    let client = connect(&server).await;

    call(&client, "echo", json!({ "text": "one" })).await;
    let result = call(&client, "stats", json!({})).await;
    let stats: StatsSnapshot = serde_json::from_str(only_text(&result)).expect("stats are JSON");
    assert_eq!(
        stats,
        StatsSnapshot {
            sessions: 1,
            tool_calls: 2,
            cancellations: 0,
            listings_peak: 0,
            task_cancels: 0,
        }
    );

    server.shutdown().await;
}
