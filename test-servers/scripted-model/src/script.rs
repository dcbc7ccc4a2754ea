//! Reading what a request says about tools, in either API's shape.

use serde_json::Value;

/// Which wire API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// The parts of a request that scripted replies depend on.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RequestView {
    /// Content of every tool result in the request, in order.
    pub(crate) tool_results: Vec<String>,
    /// Content of the tool results after the last assistant message.
    pub(crate) final_turn_results: Vec<String>,
    /// Tool results since the last user message that is not only tool
    /// results.
    pub(crate) results_since_user: usize,
    /// Whether the last message is (or, for Anthropic, holds) a tool result.
    pub(crate) last_message_is_tool_result: bool,
    /// Names of the tools the request offers.
    pub(crate) tool_names: Vec<String>,
}

impl RequestView {
    pub(crate) fn of(api: Api, request: &Value) -> Self {
        let messages = request
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut view = Self::default();
        for message in messages {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("");
            if role == "assistant" {
                view.final_turn_results.clear();
            }
            let results = match api {
                Api::OpenAi if role == "tool" => {
                    vec![content_text(message.get("content"))]
                }
                Api::OpenAi => Vec::new(),
                Api::Anthropic => blocks(message)
                    .filter(|block| block_type(block) == "tool_result")
                    .map(|block| content_text(block.get("content")))
                    .collect(),
            };
            if role == "user" && results.is_empty() {
                view.results_since_user = 0;
            }
            view.results_since_user += results.len();
            view.last_message_is_tool_result = !results.is_empty();
            view.final_turn_results.extend(results.iter().cloned());
            view.tool_results.extend(results);
        }
        view.tool_names = request
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|tool| match api {
                Api::OpenAi => tool.pointer("/function/name"),
                Api::Anthropic => tool.get("name"),
            })
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        view
    }
}

/// Fills `{last_tool_result}`, `{tool_results}` and `{result:N}` (the Nth
/// tool result since the user spoke, from 1) in a template.
pub(crate) fn render_template(template: &str, view: &RequestView) -> String {
    let last = view.tool_results.last().map(String::as_str).unwrap_or("");
    let since_user = view
        .tool_results
        .len()
        .saturating_sub(view.results_since_user);
    let mut text = template
        .replace("{last_tool_result}", last)
        .replace("{tool_results}", &view.final_turn_results.join("\n"));
    for (index, result) in view.tool_results[since_user..].iter().enumerate() {
        text = text.replace(&format!("{{result:{}}}", index + 1), result);
    }
    text
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Message or tool-result content as text: a string as it is, a list of
/// content parts as their texts joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn openai_final_turn_is_after_the_last_assistant_message() {
        let request = json!({
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": []},
                {"role": "tool", "tool_call_id": "a", "content": "old"},
                {"role": "assistant", "tool_calls": []},
                {"role": "tool", "tool_call_id": "b", "content": "one"},
                {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "two"}]}
            ],
            "tools": [{"type": "function", "function": {"name": "echo"}}]
        });
        let view = RequestView::of(Api::OpenAi, &request);
        assert_eq!(view.tool_results, ["old", "one", "two"]);
        assert_eq!(view.final_turn_results, ["one", "two"]);
        assert_eq!(view.results_since_user, 3);
        assert!(view.last_message_is_tool_result);
        assert_eq!(view.tool_names, ["echo"]);
        assert_eq!(
            render_template("[{last_tool_result}|{tool_results}]", &view),
            "[two|one\ntwo]"
        );
        assert_eq!(
            render_template("{result:1},{result:3},{result:4}", &view),
            "old,two,{result:4}"
        );
    }

    #[test]
    fn anthropic_tool_results_are_blocks_of_user_messages() {
        let request = json!({
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "echo", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "two"}]}
                ]}
            ],
            "tools": [{"name": "echo", "input_schema": {}}]
        });
        let view = RequestView::of(Api::Anthropic, &request);
        assert_eq!(view.final_turn_results, ["one", "two"]);
        assert_eq!(view.results_since_user, 2);
        assert!(view.last_message_is_tool_result);
        assert_eq!(view.tool_names, ["echo"]);

        let plain = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert!(!RequestView::of(Api::Anthropic, &plain).last_message_is_tool_result);
    }
}
