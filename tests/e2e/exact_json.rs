//! A tool's arguments and structured result travel from the model to the MCP
//! server and back without a number changing: a 64-bit id stays exact and
//! `1.0` stays `1.0`.

use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{Options, final_run, tool_messages_sent, world};

#[tokio::test]
async fn a_models_arguments_and_a_structured_result_travel_unchanged() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__record",
                r#"{"id": 9007199254740993, "ratio": 1.0, "nested": {"big": -9223372036854775807}}"#,
            )]),
            Turn::Text("recorded".into()),
        ],
        record_tool: true,
        ..Options::default()
    })
    .await;
    let events = w.say("record it").await;
    final_run(&events);
    // The server received exactly the model's values, and its structured
    // result (those values, as it read them) reached the model unchanged.
    assert_eq!(
        tool_messages_sent(&w.model, 1),
        [
            r#"{"received":{"id":9007199254740993,"nested":{"big":-9223372036854775807},"ratio":1.0}}"#
        ]
    );
}
