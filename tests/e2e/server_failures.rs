//! An MCP server's failure of a resource read or a prompt reaches the model
//! worded by runs-service from the facts mcp-service sends, in the very
//! words mcp-service gives its own callers.

use switchboard_proto::mcp::v1 as mcp;
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_server::{ClientError, ServerFacts};
use switchboard_test_support::authed;

use crate::world::{Options, final_run, tool_messages_sent, world};

#[tokio::test]
async fn a_prompt_the_server_refuses_reads_as_mcp_service_describes_it() {
    let mut w = world(Options {
        turns_for: Some(Box::new(|integration_id: &str| {
            let arguments = serde_json::json!({
                "integrationId": integration_id,
                "promptName": "summarize",
            });
            vec![
                Turn::ToolCalls(vec![ScriptedToolCall::new(
                    "c0",
                    "retrieve_mcp_prompt",
                    arguments.to_string(),
                )]),
                Turn::FromToolResults("Answer: {last_tool_result}".into()),
            ]
        })),
        ..Options::default()
    })
    .await;
    final_run(&w.say("prompt").await);
    let read = &tool_messages_sent(&w.model, 1)[0];

    let status = w
        .mcp_client
        .get_prompt(authed(
            mcp::GetPromptRequest {
                integration_id: w.integration_id.clone(),
                name: "summarize".into(),
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect_err("the server refuses a prompt without its arguments");
    let decoded = ClientError::from(&status);
    let Some(ServerFacts::JsonRpc { code, message }) = decoded.server_facts else {
        panic!("JSON-RPC facts: {decoded:?}");
    };
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("topic"), "{message}");
    assert_eq!(
        *read,
        format!("Prompt retrieval failed: {}", status.message())
    );
    assert_eq!(
        *read,
        format!("Prompt retrieval failed: MCP server: {message}")
    );
}
