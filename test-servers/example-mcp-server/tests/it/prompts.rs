use rmcp::model::{ErrorCode, GetPromptRequestParams, PromptMessage, Role};
use serde_json::json;

use crate::common::{args, connect, mcp_error, start_server};

fn text_of(message: &PromptMessage) -> (Role, &str) {
    let text = message.content.as_text().expect("prompt messages are text");
    (message.role.clone(), text.text.as_str())
}

#[tokio::test]
async fn summarize_is_listed_with_its_arguments() {
    let server = start_server().await;
    let client = connect(&server).await;

    let prompts = client.list_all_prompts().await.expect("prompts");
    let [prompt] = prompts.as_slice() else {
        panic!("one prompt: {prompts:?}");
    };
    assert_eq!(prompt.name, "summarize");
    let arguments: Vec<(&str, Option<bool>)> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(arguments, [("topic", Some(true)), ("style", Some(false))]);

    server.shutdown().await;
}

#[tokio::test]
async fn summarize_fills_in_topic_and_style() {
    let server = start_server().await;
    let client = connect(&server).await;

    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("summarize")
                .with_arguments(args(json!({ "topic": "sales", "style": "formal" }))),
        )
        .await
        .expect("prompt");
    assert!(prompt.description.is_some());
    let messages: Vec<(Role, &str)> = prompt.messages.iter().map(text_of).collect();
    assert_eq!(
        messages,
        [
            (Role::User, "Summarize sales in a formal style."),
            (Role::Assistant, "Here is a summary of sales:"),
        ]
    );

    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("summarize")
                .with_arguments(args(json!({ "topic": "sales" }))),
        )
        .await
        .expect("prompt");
    assert_eq!(
        text_of(&prompt.messages[0]),
        (Role::User, "Summarize sales in a concise style.")
    );

    server.shutdown().await;
}

#[tokio::test]
async fn summarize_without_topic_is_invalid_params() {
    let server = start_server().await;
    let client = connect(&server).await;

    let error = client
        .get_prompt(
            GetPromptRequestParams::new("summarize").with_arguments(args(json!({ "style": "x" }))),
        )
        .await
        .expect_err("topic is required");
    assert_eq!(mcp_error(error).code, ErrorCode::INVALID_PARAMS);

    server.shutdown().await;
}
