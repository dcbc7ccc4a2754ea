//! OpenAI Chat Completions replies.

use std::convert::Infallible;

use axum::{
    http::StatusCode,
    response::{
        IntoResponse as _, Response,
        sse::{Event, Sse},
    },
};
use serde_json::{Value, json};

use crate::{
    Hostile,
    hostile::{Plan, sse},
    server::{Answer, Shape, argument_pieces, chunks, json_response, unix_now},
};

/// Renders an answer as a completion, streamed when the request asked for it.
pub(crate) fn respond(answer: &Answer, shape: &Shape) -> Response {
    if shape.stream {
        stream(answer, shape)
    } else {
        complete(answer, shape)
    }
}

fn id(shape: &Shape) -> String {
    format!("chatcmpl-scripted-{}", shape.seq)
}

fn usage(shape: &Shape) -> Value {
    let (input, output) = shape.options.usage;
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
}

fn complete(answer: &Answer, shape: &Shape) -> Response {
    let (message, finish_reason) = match answer {
        Answer::ToolCalls(calls) => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
            (
                json!({"role": "assistant", "content": null, "tool_calls": tool_calls}),
                "tool_calls",
            )
        }
        Answer::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
    };
    let body = json!({
        "id": id(shape),
        "object": "chat.completion",
        "created": unix_now(),
        "model": shape.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage(shape),
    });
    json_response(StatusCode::OK, body.to_string())
}

/// The last chunk of a stream whose request asked for usage.
fn usage_chunk(id: &str, created: u64, shape: &Shape) -> Value {
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": shape.model,
        "choices": [],
        "usage": usage(shape),
    })
}

fn stream(answer: &Answer, shape: &Shape) -> Response {
    let id = id(shape);
    let created = unix_now();
    let chunk = |delta: Value, finish_reason: Option<&str>| {
        let mut chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": shape.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        });
        // With usage requested, every chunk but the last carries `usage: null`.
        if shape.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    };

    let mut chunks_out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let finish_reason = match answer {
        Answer::Text(text) => {
            for piece in chunks(text, shape.options.chunk_size) {
                chunks_out.push(chunk(json!({"content": piece}), None));
            }
            "stop"
        }
        Answer::ToolCalls(calls) => {
            for (index, call) in calls.iter().enumerate() {
                chunks_out.push(chunk(
                    json!({"tool_calls": [{
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }]}),
                    None,
                ));
                for piece in argument_pieces(&call.arguments, shape.options.chunk_size) {
                    chunks_out.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
            }
            "tool_calls"
        }
    };
    chunks_out.push(chunk(json!({}), Some(finish_reason)));
    if shape.include_usage {
        chunks_out.push(usage_chunk(&id, created, shape));
    }

    let events = chunks_out
        .into_iter()
        .map(|chunk| Event::default().data(chunk.to_string()))
        .chain(std::iter::once(Event::default().data("[DONE]")))
        .map(Ok::<_, Infallible>);
    Sse::new(futures::stream::iter(events)).into_response()
}

/// The events of a hostile reply as Chat Completions chunks.
pub(crate) fn hostile(hostile: &Hostile, shape: &Shape) -> Plan {
    let id = id(shape);
    let created = unix_now();
    let chunk = |delta: Value, finish_reason: Option<&str>| {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": shape.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        });
        sse(None, &chunk.to_string())
    };
    let mut plan = Plan {
        head: vec![chunk(json!({"role": "assistant", "content": ""}), None)],
        ..Plan::default()
    };
    match hostile {
        Hostile::EndlessText(piece) => plan.repeat = Some(chunk(json!({"content": piece}), None)),
        Hostile::Trickle(piece, every) => {
            plan.repeat = Some(chunk(json!({"content": piece}), None));
            plan.every = Some(*every);
        }
        Hostile::EndlessToolArguments(piece) => {
            plan.head.push(chunk(
                json!({"tool_calls": [{
                    "index": 0,
                    "id": format!("call_endless_{}", shape.seq),
                    "type": "function",
                    "function": {"name": "endless", "arguments": ""},
                }]}),
                None,
            ));
            plan.repeat = Some(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                None,
            ));
        }
        Hostile::Stall(text) => {
            plan.head.push(chunk(json!({"content": text}), None));
            plan.stall = true;
        }
        Hostile::HugeChunk(size) => {
            plan.head
                .push(chunk(json!({"content": "x".repeat(*size)}), None));
            plan.tail = vec![chunk(json!({}), Some("stop")), sse(None, "[DONE]")];
        }
    }
    plan
}
