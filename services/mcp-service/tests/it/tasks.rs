//! Tasks (the MCP Tasks extension of 2026-07-28): a server answers a tool
//! call with a task and runs the tool on its own. mcp-service follows the
//! task within the call's time limit and answers ExecuteTool with its
//! outcome, cancels it past the limit or when the caller leaves, and hands
//! a task's question the policy cannot answer to the caller, who resumes
//! the same task with `task_id`.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_example_mcp_server::{
    CONFIRM_KEY, HttpServerOptions, RunningHttpServer, TASK_BIG_TOOL, TASK_CONFIRM_TOOL,
    TASK_FAIL_TOOL, TASK_SLEEP_TOOL, spawn_http,
};
use switchboard_mcp_service::ElicitationPolicy;
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests};
use tokio::time::Instant;

use crate::support::{Harness, admin, bad_fields, create, http_integration, req, start_with};

/// How long a test waits for the server to see what mcp-service sends
/// after it answered.
const PATIENCE: Duration = Duration::from_secs(10);

struct Setup {
    h: Harness,
    upstream: RunningHttpServer,
    token: String,
    id: String,
}

/// mcp-service under `policy` with an integration of an example server,
/// stateless (2026-07-28) or with sessions, whose calls are limited to
/// `call_timeout` when given.
async fn setup(
    kind: DbKind,
    policy: ElicitationPolicy,
    stateful: bool,
    call_timeout: Option<u64>,
) -> Setup {
    let upstream = spawn_http(HttpServerOptions {
        stateful,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start_with(kind, |config| config.elicitation = policy).await;
    let token = admin("org-a");
    let mut request = http_integration("example", &upstream.url());
    request.timeouts = call_timeout.map(|seconds| pb::Timeouts {
        connect: None,
        call: Some(prost_types::Duration {
            seconds: i64::try_from(seconds).expect("small"),
            nanos: 0,
        }),
    });
    let id = create(&mut h, &token, request).await.id;
    Setup {
        h,
        upstream,
        token,
        id,
    }
}

fn call(s: &Setup, tool: &str, arguments: Value) -> pb::ExecuteToolRequest {
    pb::ExecuteToolRequest {
        integration_id: s.id.clone(),
        tool_name: tool.into(),
        arguments: json_to_struct(&arguments),
        session_scope: "thread-1".into(),
        ..Default::default()
    }
}

async fn execute(s: &Setup, request: pb::ExecuteToolRequest) -> pb::ExecuteToolResponse {
    s.h.client
        .clone()
        .execute_tool(req(request, &s.token))
        .await
        .expect("ExecuteTool answers")
        .into_inner()
}

fn text(response: &pb::ExecuteToolResponse) -> String {
    match response.content.first().and_then(|c| c.block.as_ref()) {
        Some(pb::content_block::Block::Text(text)) => text.text.clone(),
        other => panic!("expected text, got {other:?} in {response:?}"),
    }
}

/// Waits until the upstream server has received `tasks/cancel`.
async fn cancel_seen(s: &Setup) {
    let deadline = Instant::now() + PATIENCE;
    while s.upstream.stats.snapshot().task_cancels == 0 {
        assert!(
            Instant::now() < deadline,
            "the server never saw tasks/cancel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_tasks_result_is_the_calls_result(kind: DbKind) {
    for stateful in [false, true] {
        let s = setup(kind, ElicitationPolicy::Decline, stateful, None).await;
        let done = execute(&s, call(&s, TASK_SLEEP_TOOL, json!({"ms": 50}))).await;
        assert!(!done.is_error, "stateful {stateful}: {done:?}");
        assert_eq!(text(&done), "slept 50ms");
        let stats = s.upstream.stats.snapshot();
        assert_eq!(stats.tool_calls, 1, "the tool was started once");
        assert_eq!(stats.task_cancels, 0, "a task that ended is not cancelled");
    }
}

async fn a_tasks_result_is_held_to_the_result_size_limit(kind: DbKind) {
    const LIMIT: usize = 64 * 1024;
    let upstream = spawn_http(HttpServerOptions {
        stateful: false,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start_with(kind, |config| config.max_result_bytes = LIMIT).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;
    let s = Setup {
        h,
        upstream,
        token,
        id,
    };
    let small = execute(&s, call(&s, TASK_BIG_TOOL, json!({"bytes": LIMIT / 2}))).await;
    assert!(!small.is_error, "{}", small.error_message);
    assert_eq!(text(&small).len(), LIMIT / 2);
    let large = execute(&s, call(&s, TASK_BIG_TOOL, json!({"bytes": LIMIT + 1}))).await;
    assert!(large.is_error);
    assert_eq!(
        large.failure_reason(),
        pb::ToolFailureReason::ResultTooLarge,
        "{}",
        large.error_message
    );
    assert!(
        large.error_message.contains("larger than 64 KiB"),
        "{}",
        large.error_message
    );
    assert_eq!(
        s.upstream.stats.snapshot().tool_calls,
        2,
        "each task started once"
    );
}

async fn a_failed_task_is_a_tool_error(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Decline, false, None).await;
    let failed = execute(
        &s,
        call(&s, TASK_FAIL_TOOL, json!({"message": "the disk is full"})),
    )
    .await;
    assert!(failed.is_error, "{failed:?}");
    assert_eq!(failed.failure_reason(), pb::ToolFailureReason::ToolError);
    assert!(
        failed.error_message.contains("the disk is full"),
        "the server's reason reaches the model: {}",
        failed.error_message
    );
    assert_eq!(s.upstream.stats.snapshot().task_cancels, 0);
}

async fn a_slow_task_times_out_and_the_server_is_told_to_cancel_it(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Decline, false, Some(1)).await;
    let slow = execute(&s, call(&s, TASK_SLEEP_TOOL, json!({"ms": 60_000}))).await;
    assert!(slow.is_error);
    assert_eq!(slow.failure_reason(), pb::ToolFailureReason::Timeout);
    assert!(
        slow.error_message.contains("did not answer within 1s"),
        "{}",
        slow.error_message
    );
    cancel_seen(&s).await;
    assert_eq!(s.upstream.stats.snapshot().tool_calls, 1);
}

async fn a_caller_that_leaves_cancels_the_task(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Decline, false, None).await;
    let mut client = s.h.client.clone();
    let request = req(call(&s, TASK_SLEEP_TOOL, json!({"ms": 60_000})), &s.token);
    let calling = tokio::spawn(async move { client.execute_tool(request).await });
    let deadline = Instant::now() + PATIENCE;
    while s.upstream.stats.snapshot().tool_calls == 0 {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The caller goes away: its stream is reset and the call dropped.
    calling.abort();
    cancel_seen(&s).await;
}

fn confirm(s: &Setup) -> pb::ExecuteToolRequest {
    call(s, TASK_CONFIRM_TOOL, json!({"action": "deploy"}))
}

async fn a_tasks_question_goes_to_the_caller_who_resumes_the_same_task(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Caller, false, None).await;
    let asked = execute(&s, confirm(&s)).await;
    assert!(asked.is_error, "the tool has not finished: {asked:?}");
    assert_eq!(asked.failure_reason(), pb::ToolFailureReason::InputRequired);
    assert!(
        asked.error_message.contains("Go ahead with deploy?"),
        "{}",
        asked.error_message
    );
    let input = asked.input_required.expect("the task's question");
    assert_eq!(input.request_state, None, "a task keeps its own state");
    let task_id = input.task_id.expect("the task to resume");
    let [question] = input.requests.as_slice() else {
        panic!("one question, got {:?}", input.requests);
    };
    assert_eq!(question.key, CONFIRM_KEY);
    assert_eq!(question.method, "elicitation/create");

    let answer = json!({"action": "accept", "content": {"confirmed": true}});
    let mut resume = confirm(&s);
    resume.task_id = Some(task_id);
    resume
        .input_responses
        .insert(CONFIRM_KEY.into(), answer.to_string());
    let done = execute(&s, resume).await;
    assert!(!done.is_error, "{done:?}");
    assert_eq!(text(&done), "confirmed deploy");
    let structured: Value =
        serde_json::from_str(&done.structured_content_json).expect("structured JSON");
    assert_eq!(structured["answer"], answer, "the answer reached the task");
    let stats = s.upstream.stats.snapshot();
    assert_eq!(
        stats.tool_calls, 1,
        "the resume did not start the tool again"
    );
    assert_eq!(stats.task_cancels, 0, "the waiting task was not cancelled");
}

async fn the_policy_answers_a_tasks_question_within_one_call(kind: DbKind) {
    for (policy, verdict) in [
        (ElicitationPolicy::Defaults, "not confirmed deploy"),
        (ElicitationPolicy::Decline, "declined deploy"),
    ] {
        let s = setup(kind, policy, false, None).await;
        let done = execute(&s, confirm(&s)).await;
        assert!(!done.is_error, "{policy:?}: {done:?}");
        assert_eq!(text(&done), verdict, "{policy:?}");
        assert_eq!(s.upstream.stats.snapshot().tool_calls, 1);
    }
}

async fn task_ids_not_handed_out_for_the_call_are_refused_before_the_server(kind: DbKind) {
    const MAX_TASK_ID_BYTES: usize = 1024;
    let s = setup(kind, ElicitationPolicy::Caller, false, None).await;
    let with_task = |task_id: String, state: Option<&str>| {
        let mut request = confirm(&s);
        request.task_id = Some(task_id);
        request.request_state = state.map(str::to_owned);
        request
    };
    // A task id this service did not hand out for this call (a guessed or
    // another user's one) is refused before the server, whatever its size.
    for bad in [
        with_task(String::new(), None),
        with_task("t".repeat(MAX_TASK_ID_BYTES + 1), None),
        with_task("t".repeat(MAX_TASK_ID_BYTES), None),
        with_task("t".into(), Some("state")),
    ] {
        let refused =
            s.h.client
                .clone()
                .execute_tool(req(bad, &s.token))
                .await
                .expect_err("refused");
        assert_eq!(bad_fields(&refused), vec!["task_id".to_owned()]);
    }
    assert_eq!(
        s.upstream.stats.snapshot().tool_calls,
        0,
        "a resume never starts the tool"
    );
}

db_tests!(
    a_caller_that_leaves_cancels_the_task,
    a_failed_task_is_a_tool_error,
    a_slow_task_times_out_and_the_server_is_told_to_cancel_it,
    a_tasks_result_is_held_to_the_result_size_limit,
    a_tasks_question_goes_to_the_caller_who_resumes_the_same_task,
    a_tasks_result_is_the_calls_result,
    task_ids_not_handed_out_for_the_call_are_refused_before_the_server,
    the_policy_answers_a_tasks_question_within_one_call,
);
