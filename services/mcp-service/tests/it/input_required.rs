//! Multi-round-trip requests: a server of 2026-07-28 asks for input before
//! it finishes a call (`input_required`). mcp-service answers by its
//! elicitation policy, or hands the question to the caller, who resumes the
//! call with the answers and the server's state.

use serde_json::{Value, json};
use switchboard_example_mcp_server::{
    CONFIRM_KEY, CONFIRM_TOOL, HttpServerOptions, RunningHttpServer, spawn_http,
};
use switchboard_mcp_service::ElicitationPolicy;
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests};
use tonic::Code;

use crate::support::{
    Harness, admin, bad_fields, create, http_integration, member, req, start_with,
};

struct Setup {
    h: Harness,
    upstream: RunningHttpServer,
    token: String,
    id: String,
}

/// mcp-service under `policy` with an integration of a stateless example
/// server (one that speaks 2026-07-28).
async fn setup(kind: DbKind, policy: ElicitationPolicy) -> Setup {
    let upstream = spawn_http(HttpServerOptions {
        stateful: false,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start_with(kind, |config| config.elicitation = policy).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;
    Setup {
        h,
        upstream,
        token,
        id,
    }
}

fn confirm(s: &Setup, answers: &[(&str, Value)], state: Option<&str>) -> pb::ExecuteToolRequest {
    pb::ExecuteToolRequest {
        integration_id: s.id.clone(),
        tool_name: CONFIRM_TOOL.into(),
        arguments: json_to_struct(&json!({"action": "deploy"})),
        input_responses: answers
            .iter()
            .map(|(key, answer)| ((*key).to_owned(), answer.to_string()))
            .collect(),
        request_state: state.map(str::to_owned),
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

async fn the_caller_answers_a_servers_question_and_the_call_resumes(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Caller).await;
    let asked = execute(&s, confirm(&s, &[], None)).await;
    assert!(asked.is_error, "the tool has not finished: {asked:?}");
    assert_eq!(asked.failure_reason(), pb::ToolFailureReason::InputRequired);
    assert!(
        asked.error_message.contains("Go ahead with deploy?"),
        "the question is in the message a model reads: {}",
        asked.error_message
    );
    let input = asked.input_required.expect("the server's question");
    let [question] = input.requests.as_slice() else {
        panic!("one question, got {:?}", input.requests);
    };
    assert_eq!(question.key, CONFIRM_KEY);
    assert_eq!(question.method, "elicitation/create");
    let params: Value = serde_json::from_str(&question.params_json).expect("params are JSON");
    assert_eq!(params["message"], "Go ahead with deploy?");
    assert_eq!(
        params["requestedSchema"]["properties"]["confirmed"]["type"],
        "boolean"
    );
    let state = input.request_state.expect("the server's state");

    let answer = json!({"action": "accept", "content": {"confirmed": true}});
    let done = execute(
        &s,
        confirm(&s, &[(CONFIRM_KEY, answer.clone())], Some(&state)),
    )
    .await;
    assert!(!done.is_error, "{done:?}");
    assert_eq!(text(&done), "confirmed deploy");
    let structured: Value =
        serde_json::from_str(&done.structured_content_json).expect("structured JSON");
    assert_eq!(
        structured["answer"], answer,
        "the answer reached the server as sent"
    );
}

async fn the_policy_answers_a_servers_question_within_one_call(kind: DbKind) {
    for (policy, verdict) in [
        (ElicitationPolicy::Defaults, "not confirmed deploy"),
        (ElicitationPolicy::Decline, "declined deploy"),
    ] {
        let s = setup(kind, policy).await;
        let done = execute(&s, confirm(&s, &[], None)).await;
        assert!(!done.is_error, "{policy:?}: {done:?}");
        assert!(done.input_required.is_none());
        assert_eq!(text(&done), verdict, "{policy:?}");
    }
}

/// A `request_state` resumes only the call it was handed out for: another
/// user of the organization, another tool, or a state the service never
/// handed out is refused with INVALID_ARGUMENT and never reaches the server.
async fn a_request_state_resumes_only_the_call_it_was_handed_to(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Caller).await;
    let answer = json!({"action": "accept", "content": {"confirmed": true}});
    let asked = execute(&s, confirm(&s, &[], None)).await;
    let state = asked
        .input_required
        .and_then(|input| input.request_state)
        .expect("the server's state");
    assert!(
        !state.contains("confirm:"),
        "the server's value is sealed: {state}"
    );
    let calls = s.upstream.stats.snapshot().tool_calls;

    let another_user = member("org-a");
    let mut other_tool = confirm(&s, &[(CONFIRM_KEY, answer.clone())], Some(&state));
    other_tool.tool_name = "echo".into();
    for (request, token) in [
        (
            confirm(&s, &[(CONFIRM_KEY, answer.clone())], Some(&state)),
            another_user.as_str(),
        ),
        (other_tool, s.token.as_str()),
        (
            confirm(
                &s,
                &[(CONFIRM_KEY, answer.clone())],
                Some("confirm:something-else"),
            ),
            s.token.as_str(),
        ),
    ] {
        let refused =
            s.h.client
                .clone()
                .execute_tool(req(request, token))
                .await
                .expect_err("not this call's state");
        assert_eq!(bad_fields(&refused), vec!["request_state".to_owned()]);
    }
    assert_eq!(
        s.upstream.stats.snapshot().tool_calls,
        calls,
        "no refused resume reached the server"
    );
    let done = execute(&s, confirm(&s, &[(CONFIRM_KEY, answer)], Some(&state))).await;
    assert!(!done.is_error, "the receiver still resumes it: {done:?}");

    let mut bad = confirm(&s, &[], None);
    bad.input_responses
        .insert(CONFIRM_KEY.into(), "[\"not an object\"]".into());
    let refused =
        s.h.client
            .clone()
            .execute_tool(req(bad, &s.token))
            .await
            .expect_err("an answer that is not an object is refused");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(
        bad_fields(&refused),
        vec![format!("input_responses[{CONFIRM_KEY}]")]
    );
}

async fn a_prompt_that_asks_is_answered_by_the_caller_too(kind: DbKind) {
    let s = setup(kind, ElicitationPolicy::Caller).await;
    let prompt = |answers: &[(&str, Value)], state: Option<&str>| pb::GetPromptRequest {
        integration_id: s.id.clone(),
        name: CONFIRM_TOOL.into(),
        arguments: [("action".to_owned(), "deploy".to_owned())].into(),
        input_responses: answers
            .iter()
            .map(|(key, answer)| ((*key).to_owned(), answer.to_string()))
            .collect(),
        request_state: state.map(str::to_owned),
        ..Default::default()
    };
    let get = |request| {
        let mut client = s.h.client.clone();
        let request = req(request, &s.token);
        async move {
            client
                .get_prompt(request)
                .await
                .expect("GetPrompt answers")
                .into_inner()
        }
    };
    let asked = get(prompt(&[], None)).await;
    assert!(asked.messages.is_empty(), "{asked:?}");
    let input = asked.input_required.expect("the server's question");
    assert_eq!(input.requests[0].key, CONFIRM_KEY);
    let answer = json!({"action": "decline"});
    let done = get(prompt(
        &[(CONFIRM_KEY, answer)],
        input.request_state.as_deref(),
    ))
    .await;
    assert!(done.input_required.is_none(), "{done:?}");
    let text = match done.messages[0]
        .content
        .as_ref()
        .and_then(|c| c.block.as_ref())
    {
        Some(pb::content_block::Block::Text(text)) => text.text.clone(),
        other => panic!("expected text, got {other:?}"),
    };
    assert_eq!(text, "declined deploy");
}

db_tests!(
    a_prompt_that_asks_is_answered_by_the_caller_too,
    the_caller_answers_a_servers_question_and_the_call_resumes,
    the_policy_answers_a_servers_question_within_one_call,
    a_request_state_resumes_only_the_call_it_was_handed_to,
);
