//! A model's arguments to an MCP tool are checked against the tool's input
//! schema before the call leaves runs-service: the model is told what is
//! wrong, field by field, and the MCP server never sees the call.

use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{Options, final_run, tool_messages_sent, world};

#[tokio::test]
async fn an_argument_of_the_wrong_type_is_answered_and_never_reaches_the_server() {
    let call = |id: &str, arguments: serde_json::Value| {
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            id,
            "example__add",
            arguments.to_string(),
        )])
    };
    let mut w = world(Options {
        turns: vec![
            call("c1", serde_json::json!({"a": "one", "b": 2})),
            call("c2", serde_json::json!({"a": 1})),
            Turn::Text("done".into()),
        ],
        ..Options::default()
    })
    .await;
    final_run(&w.say("add").await);
    assert_eq!(
        tool_messages_sent(&w.model, 1)[0],
        "MCP tool execution failed: the arguments do not match the tool's input schema: `/a`: \"one\" is not of type \"number\""
    );
    assert_eq!(
        tool_messages_sent(&w.model, 2)[1],
        "MCP tool execution failed: the arguments do not match the tool's input schema: \"b\" is a required property"
    );
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        0,
        "no call reached the server"
    );
}
