//! Which of a thread's messages a model request carries: the newest ones,
//! within a count and a size, starting where a conversation may start.

use crate::domain::{
    entities::{Message, Part, Role},
    error::RunsError,
    history::{HistoryLimits, WindowMeter},
    model::{ChatMessage, ToolCall},
    texts::INTERRUPTED_CALL,
};

/// Keeps the newest messages of `history` (oldest first) that fit in
/// `limits`, from the first that may open a conversation: a user message,
/// or else a model turn, never a tool result whose call was cut off.
pub fn keep_window(history: &mut Vec<Message>, limits: HistoryLimits) -> Result<(), RunsError> {
    let mut meter = WindowMeter::new(limits);
    let kept = history
        .iter()
        .rev()
        .take_while(|message| meter.admits(message.size()))
        .count();
    let cut = history.len() - kept;
    let window = &history[cut..];
    let start = window
        .iter()
        .position(|message| message.role == Role::User)
        .or_else(|| {
            window
                .iter()
                .position(|message| message.role == Role::Assistant)
        });
    match start {
        Some(start) => {
            history.drain(..cut + start);
            Ok(())
        }
        None if history.is_empty() => Ok(()),
        None => Err(RunsError::FailedPrecondition(format!(
            "the thread's newest tool results are larger than the history limit of {} bytes",
            limits.max_bytes
        ))),
    }
}

/// The messages as the model sees them.
/// The messages as a model conversation; a tool call the thread holds
/// without a result (its run ended while it was under way) is answered as
/// interrupted, so the conversation stays one a model accepts.
pub fn to_chat(messages: &[Message]) -> Vec<ChatMessage> {
    answer_interrupted_calls(chat_of(messages))
}

fn chat_of(messages: &[Message]) -> Vec<ChatMessage> {
    let mut chat = Vec::with_capacity(messages.len());
    for message in messages {
        match message.role {
            Role::User => {
                let text = message
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                chat.push(ChatMessage::User { text });
            }
            Role::Assistant => {
                let mut text = String::new();
                let mut tool_calls = Vec::new();
                for part in &message.parts {
                    match part {
                        Part::Text { text: t } => text.push_str(t),
                        Part::ToolCall {
                            id,
                            name,
                            arguments,
                        } => tool_calls.push(ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: arguments.clone(),
                        }),
                        Part::ToolResult { .. } => {}
                    }
                }
                chat.push(ChatMessage::Assistant { text, tool_calls });
            }
            Role::Tool => {
                for part in &message.parts {
                    if let Part::ToolResult {
                        tool_call_id,
                        name,
                        content,
                        is_error,
                    } = part
                    {
                        chat.push(ChatMessage::ToolResult {
                            call_id: tool_call_id.clone(),
                            name: name.clone(),
                            content: content.clone(),
                            is_error: *is_error,
                        });
                    }
                }
            }
        }
    }
    chat
}

/// After each model turn's results, a result for each of its calls that
/// has none.
fn answer_interrupted_calls(chat: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut answered = Vec::with_capacity(chat.len());
    let mut waiting: Vec<ToolCall> = Vec::new();
    for message in chat {
        let is_result = matches!(message, ChatMessage::ToolResult { .. });
        if !is_result {
            answer_missing(&mut answered, &mut waiting);
        }
        match &message {
            ChatMessage::Assistant { tool_calls, .. } => waiting.clone_from(tool_calls),
            ChatMessage::ToolResult { call_id, .. } => waiting.retain(|c| &c.id != call_id),
            ChatMessage::User { .. } => {}
        }
        answered.push(message);
    }
    answer_missing(&mut answered, &mut waiting);
    answered
}

fn answer_missing(chat: &mut Vec<ChatMessage>, waiting: &mut Vec<ToolCall>) {
    chat.extend(waiting.drain(..).map(|call| ChatMessage::ToolResult {
        call_id: call.id,
        name: call.name,
        content: INTERRUPTED_CALL.to_owned(),
        is_error: true,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::{MessageId, ThreadId};

    fn message(seq: i64, role: Role, size: usize) -> Message {
        let filler = "x".repeat(size);
        let part = match role {
            Role::User => Part::Text { text: filler },
            Role::Assistant => Part::ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: filler,
            },
            Role::Tool => Part::ToolResult {
                tool_call_id: String::new(),
                name: String::new(),
                content: filler,
                is_error: false,
            },
        };
        Message {
            id: MessageId::new(),
            thread_id: ThreadId::fixed(1),
            run_id: None,
            seq,
            role,
            parts: vec![part],
            created_at: 0,
        }
    }

    fn seqs(history: &[Message]) -> Vec<i64> {
        history.iter().map(|m| m.seq).collect()
    }

    fn limits(max_messages: u32, max_bytes: usize) -> HistoryLimits {
        HistoryLimits {
            max_messages,
            max_bytes,
        }
    }

    #[test]
    fn the_window_keeps_the_newest_messages_in_order() {
        let mut history: Vec<_> = (1..=10).map(|seq| message(seq, Role::User, 1)).collect();
        keep_window(&mut history, limits(3, 100)).expect("fits");
        assert_eq!(seqs(&history), [8, 9, 10]);
    }

    #[test]
    fn the_window_never_opens_with_a_tool_result() {
        // user, call, result, call, result, user: three messages end at the
        // second result, whose call is cut off with the first.
        let roles = [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
        ];
        let mut history: Vec<_> = roles
            .iter()
            .zip(1..)
            .map(|(role, seq)| message(seq, *role, 1))
            .collect();
        let mut cut = history.clone();
        keep_window(&mut cut, limits(3, 100)).expect("fits");
        assert_eq!(seqs(&cut), [4, 5], "the call stays with its result");

        history.push(message(6, Role::User, 1));
        keep_window(&mut history, limits(4, 100)).expect("fits");
        assert_eq!(seqs(&history), [6], "a user message opens the window");
    }

    #[test]
    fn bytes_bound_the_window_but_the_newest_message_always_stays() {
        let mut history = vec![
            message(1, Role::User, 50),
            message(2, Role::User, 50),
            message(3, Role::User, 50),
        ];
        keep_window(&mut history, limits(100, 120)).expect("fits");
        assert_eq!(seqs(&history), [2, 3]);
        let mut huge = vec![message(1, Role::User, 10), message(2, Role::User, 500)];
        keep_window(&mut huge, limits(100, 120)).expect("fits");
        assert_eq!(seqs(&huge), [2]);
    }

    #[test]
    fn tool_results_alone_past_the_limit_are_an_error() {
        let mut history = vec![
            message(1, Role::User, 1),
            message(2, Role::Assistant, 1),
            message(3, Role::Tool, 500),
        ];
        let error = keep_window(&mut history, limits(100, 100)).expect_err("no start");
        assert!(error.to_string().contains("history limit"), "{error}");
    }

    #[test]
    fn a_call_left_without_a_result_reads_as_interrupted() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "x__y".into(),
            arguments: "{}".into(),
        };
        let result = |id: &str, content: &str, is_error: bool| ChatMessage::ToolResult {
            call_id: id.into(),
            name: "x__y".into(),
            content: content.into(),
            is_error,
        };
        let chat = vec![
            ChatMessage::User { text: "hi".into() },
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call("a"), call("b")],
            },
            result("a", "done", false),
            ChatMessage::User {
                text: "again".into(),
            },
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call("c")],
            },
        ];
        let answered = answer_interrupted_calls(chat.clone());
        let mut expected = chat;
        expected.insert(3, result("b", INTERRUPTED_CALL, true));
        expected.push(result("c", INTERRUPTED_CALL, true));
        assert_eq!(answered, expected);
    }
}
