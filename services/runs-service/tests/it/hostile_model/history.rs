//! A thread longer than the history limit sends the model its newest
//! messages, in order, opening with a user message and keeping every tool
//! call with its result.

use serde_json::Value;
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{DbKind, db_tests};

use super::{bench, completed};

/// `(role, text)` of each message of request `index` but the system prompt,
/// in the OpenAI shape.
fn sent(requests: &[Value], index: usize) -> Vec<(String, String)> {
    requests[index]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["role"] != "system")
        .map(|message| {
            let role = message["role"].as_str().unwrap_or_default().to_owned();
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                _ => message["tool_calls"][0]["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            };
            (role, text)
        })
        .collect()
}

async fn a_thread_past_the_history_limit_sends_the_newest_messages(kind: DbKind) {
    let turns = vec![
        Turn::Text("one".into()),
        Turn::ToolCalls(vec![ScriptedToolCall::new("call_1", "missing_tool", "{}")]),
        Turn::Text("two".into()),
        Turn::Text("three".into()),
    ];
    let mut bench = bench(kind, "openai", turns, |config| {
        config.model_limits.history_max_messages = 6;
    })
    .await;
    completed(&bench.say("first").await);
    completed(&bench.say("second").await);
    completed(&bench.say("third").await);
    assert_eq!(
        bench.messages().await.len(),
        8,
        "the thread keeps everything"
    );

    // The thread before the last call: first, one, second, call, result,
    // two, third. Six messages would open with the answer "one"; the
    // window opens with the user message after it instead.
    let requests = bench.model.requests();
    let last = sent(&requests, requests.len() - 1);
    let roles: Vec<&str> = last.iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
    assert_eq!(last[0].1, "second");
    assert_eq!(last[1].1, "missing_tool");
    assert_eq!(last[3].1, "two");
    assert_eq!(last[4].1, "third", "the newest user message is sent");
    bench.stop().await;
}

async fn a_thread_past_the_history_size_sends_the_newest_user_message(kind: DbKind) {
    let turns = vec![Turn::Text("one".into()), Turn::Text("two".into())];
    let mut bench = bench(kind, "anthropic", turns, |config| {
        config.model_limits.history_max_bytes = 2000;
    })
    .await;
    completed(&bench.say(&"a".repeat(1500)).await);
    let newest = "b".repeat(1500);
    completed(&bench.say(&newest).await);
    let requests = bench.model.requests();
    let messages = requests[1]["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "only the newest message fits");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], newest.as_str());
    bench.stop().await;
}

db_tests!(
    a_thread_past_the_history_limit_sends_the_newest_messages,
    a_thread_past_the_history_size_sends_the_newest_user_message,
);
