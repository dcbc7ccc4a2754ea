//! A failed call as the ExecuteTool response: each reason with its facts in
//! the fields it documents, and the description callers older than the
//! facts read, as it always was.

use std::time::Duration;

use switchboard_proto::mcp::v1 as pb;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::wire::tool_result;
use crate::domain::{
    guardrails::Checked,
    outcome::{InputRequired, ToolOutcome},
    ports::CallError,
};

fn failed(error: CallError) -> pb::ExecuteToolResponse {
    let response = tool_result(Err(error), "deploy");
    assert!(response.is_error);
    assert_eq!(response.content, []);
    response
}

fn seconds(seconds: i64, nanos: i32) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds, nanos })
}

#[test]
fn each_failure_sends_its_reason_its_facts_and_the_same_description() {
    use pb::ToolFailureReason as Reason;
    let bare = pb::ExecuteToolResponse::default();
    let cases = [
        (
            CallError::Timeout(Duration::from_millis(2500)),
            Reason::Timeout,
            "the tool `deploy` did not answer within 2.5s and was cancelled",
            pb::ExecuteToolResponse {
                timeout: seconds(2, 500_000_000),
                ..bare.clone()
            },
        ),
        (
            CallError::TooLarge { limit: 65_536 },
            Reason::ResultTooLarge,
            "the result is larger than 64 KiB",
            pb::ExecuteToolResponse {
                result_limit_bytes: Some(65_536),
                ..bare.clone()
            },
        ),
        (
            CallError::Connect("connection refused".into()),
            Reason::ServerUnreachable,
            "could not connect to the MCP server: connection refused",
            pb::ExecuteToolResponse {
                detail: Some("connection refused".into()),
                ..bare.clone()
            },
        ),
        (
            CallError::Transport("stream closed".into()),
            Reason::ConnectionLost,
            "the connection to the MCP server failed: stream closed",
            pb::ExecuteToolResponse {
                detail: Some("stream closed".into()),
                ..bare.clone()
            },
        ),
        (
            CallError::Upstream {
                code: -32601,
                message: "no such method".into(),
            },
            Reason::ProtocolError,
            "no such method",
            pb::ExecuteToolResponse {
                jsonrpc_error: Some(pb::JsonRpcError {
                    code: -32601,
                    message: "no such method".into(),
                }),
                ..bare.clone()
            },
        ),
        (
            CallError::ListingTooLong("the server lists more than 10 items".into()),
            Reason::ProtocolError,
            "the server lists more than 10 items",
            pb::ExecuteToolResponse {
                detail: Some("the server lists more than 10 items".into()),
                ..bare.clone()
            },
        ),
        (
            CallError::Exhausted {
                message: "all sessions are in use".into(),
                retry_after: Duration::from_millis(1500),
            },
            Reason::LimitReached,
            "all sessions are in use; retry in 1s",
            pb::ExecuteToolResponse {
                detail: Some("all sessions are in use".into()),
                retry_after: seconds(1, 500_000_000),
                ..bare.clone()
            },
        ),
        (
            CallError::AuthorizationRequired(Some("Bearer realm=\"x\"".into())),
            Reason::AuthorizationRequired,
            "the integration needs your authorization",
            bare.clone(),
        ),
    ];
    for (error, reason, description, facts) in cases {
        let response = failed(error);
        assert_eq!(response.failure_reason(), reason);
        assert_eq!(response.error_message, description);
        let only_facts = pb::ExecuteToolResponse {
            timeout: response.timeout,
            result_limit_bytes: response.result_limit_bytes,
            detail: response.detail,
            jsonrpc_error: response.jsonrpc_error,
            retry_after: response.retry_after,
            ..bare.clone()
        };
        assert_eq!(only_facts, facts, "{reason:?}");
    }
}

#[test]
fn a_result_carries_no_failure_facts() {
    let answered = tool_result(
        Ok(Checked::clean(ToolOutcome::Complete(
            CallToolResult::error(vec![ContentBlock::text("no")]),
        ))),
        "deploy",
    );
    assert_eq!(answered.failure_reason(), pb::ToolFailureReason::ToolError);
    assert_eq!(answered.error_message, "no");
    assert_eq!(
        (
            answered.timeout,
            answered.result_limit_bytes,
            answered.detail,
            answered.jsonrpc_error,
            answered.retry_after
        ),
        (None, None, None, None, None)
    );
}

#[test]
fn input_required_carries_each_request_its_state_and_task() {
    let requests = serde_json::from_value(json!({
        "ask": {"method": "elicitation/create", "params": {
            "message": "which region?",
            "requestedSchema": {"type": "object", "properties": {}}
        }},
        "think": {"method": "sampling/createMessage", "params": {
            "messages": [], "maxTokens": 10
        }},
        "where": {"method": "roots/list"}
    }))
    .expect("input requests");
    let asked = ToolOutcome::InputRequired(InputRequired {
        requests,
        request_state: Some("s-1".into()),
        task_id: Some("task-7".into()),
    });
    let response = tool_result(Ok(Checked::clean(asked)), "deploy");
    assert!(response.is_error);
    assert_eq!(
        response.failure_reason(),
        pb::ToolFailureReason::InputRequired
    );
    assert_eq!(
        response.error_message,
        "the tool `deploy` needs input before it can finish: which region?"
    );
    let input = response.input_required.expect("input required");
    assert_eq!(input.request_state.as_deref(), Some("s-1"));
    assert_eq!(input.task_id.as_deref(), Some("task-7"));
    let methods: Vec<_> = input
        .requests
        .iter()
        .map(|r| (r.key.as_str(), r.method.as_str()))
        .collect();
    assert_eq!(
        methods,
        [
            ("ask", "elicitation/create"),
            ("think", "sampling/createMessage"),
            ("where", "roots/list")
        ]
    );
    let params: serde_json::Value =
        serde_json::from_str(&input.requests[0].params_json).expect("params JSON");
    assert_eq!(params["message"], "which region?");
    assert_eq!(input.requests[2].params_json, "");
}

#[test]
fn a_structured_result_comes_back_exactly() {
    let mut result = CallToolResult::success(vec![ContentBlock::text("done")]);
    result.structured_content =
        Some(serde_json::from_str(r#"{"id": 9007199254740993, "ratio": 1.5}"#).expect("JSON"));
    let response = tool_result(Ok(Checked::clean(ToolOutcome::Complete(result))), "record");
    assert!(!response.is_error);
    assert_eq!(
        response.structured_content_json,
        r#"{"id":9007199254740993,"ratio":1.5}"#
    );
    let Some(pb::content_block::Block::Text(text)) = &response.content[0].block else {
        panic!("a text block: {:?}", response.content);
    };
    assert_eq!(text.text, "done");
}

#[test]
fn a_discovered_tool_keeps_its_schema_and_its_hints() {
    let tool: rmcp::model::Tool = serde_json::from_value(json!({
        "name": "deploy",
        "description": "ships it",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "annotations": {"title": "Deploy", "readOnlyHint": false, "destructiveHint": true}
    }))
    .expect("a tool");
    let discovery = crate::domain::ports::Discovery {
        tools: vec![tool],
        ..Default::default()
    };
    let listed = super::wire::discovery(&discovery).tools;
    let [tool] = listed.as_slice() else {
        panic!("one tool: {listed:?}");
    };
    assert_eq!(
        (tool.name.as_str(), tool.description.as_str()),
        ("deploy", "ships it")
    );
    let schema = tool.input_schema.as_ref().expect("its input schema");
    assert!(schema.fields.contains_key("properties"));
    assert_eq!(tool.output_schema, None);
    let hints = tool.annotations.as_ref().expect("its annotations");
    assert_eq!(hints.title, "Deploy");
    assert_eq!(
        (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint
        ),
        (Some(false), Some(true), None)
    );
}

#[test]
fn a_read_and_a_prompt_carry_their_contents_and_messages() {
    use crate::domain::{outcome::Outcome, resource::ResourceRead};
    let read = serde_json::from_value(json!({"contents": [
        {"uri": "mem://a", "blob": "AAE=", "mimeType": "image/png"},
        {"uri": "mem://b", "text": "hi"}
    ]}))
    .expect("a read");
    let response =
        super::wire::resource_read(ResourceRead::new("mem://a".into(), Outcome::Complete(read)));
    assert_eq!(response.kind(), pb::ResourceKind::Binary);
    assert_eq!(response.mime_type, "image/png");
    use pb::resource_contents::Content;
    assert_eq!(
        response.contents[0].content,
        Some(Content::Blob(vec![0, 1]))
    );
    assert_eq!(
        response.contents[1].content,
        Some(Content::Text("hi".into()))
    );

    let prompt = serde_json::from_value(json!({"description": "greets", "messages": [
        {"role": "assistant", "content": {"type": "text", "text": "hello"}}
    ]}))
    .expect("a prompt");
    let response = super::wire::prompt_result(&Checked::clean(Outcome::Complete(prompt)));
    assert_eq!(response.description, "greets");
    assert_eq!(response.messages[0].role(), pb::Role::Assistant);
    assert!(response.input_required.is_none());
}
