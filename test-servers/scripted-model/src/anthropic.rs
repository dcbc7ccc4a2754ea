//! Anthropic Messages replies.

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
    server::{Answer, Shape, argument_pieces, chunks, json_response},
};

/// Renders an answer as a message, streamed when the request asked for it.
pub(crate) fn respond(answer: &Answer, shape: &Shape) -> Response {
    if shape.stream {
        stream(answer, shape)
    } else {
        complete(answer, shape)
    }
}

fn id(shape: &Shape) -> String {
    format!("msg_scripted_{}", shape.seq)
}

fn stop_reason(answer: &Answer) -> &'static str {
    match answer {
        Answer::Text(_) => "end_turn",
        Answer::ToolCalls(_) => "tool_use",
    }
}

fn complete(answer: &Answer, shape: &Shape) -> Response {
    let content: Vec<Value> = match answer {
        Answer::Text(text) => vec![json!({"type": "text", "text": text})],
        Answer::ToolCalls(calls) => calls
            .iter()
            .map(|call| {
                // A whole message carries `input` as JSON; arguments that are
                // not JSON can only travel as a string.
                let input = serde_json::from_str::<Value>(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
            })
            .collect(),
    };
    let (input_tokens, output_tokens) = shape.options.usage;
    let body = json!({
        "id": id(shape),
        "type": "message",
        "role": "assistant",
        "model": shape.model,
        "content": content,
        "stop_reason": stop_reason(answer),
        "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    });
    json_response(StatusCode::OK, body.to_string())
}

/// The event that opens every Messages stream.
fn message_start(shape: &Shape) -> Value {
    let (input_tokens, _) = shape.options.usage;
    json!({"type": "message_start", "message": {
        "id": id(shape),
        "type": "message",
        "role": "assistant",
        "model": shape.model,
        "content": [],
        "stop_reason": null,
        "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }})
}

fn stream(answer: &Answer, shape: &Shape) -> Response {
    let (_, output_tokens) = shape.options.usage;
    let mut events = vec![
        ("message_start", message_start(shape)),
        // The real API interleaves pings; clients must skip them.
        ("ping", json!({"type": "ping"})),
    ];
    events.extend(content_blocks(answer, shape));
    events.push((
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null},
            "usage": {"output_tokens": output_tokens},
        }),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));

    let events = events.into_iter().map(|(name, data)| {
        Ok::<_, Infallible>(Event::default().event(name).data(data.to_string()))
    });
    Sse::new(futures::stream::iter(events)).into_response()
}

/// The content blocks of `answer`: start, deltas of `chunk_size`, stop.
fn content_blocks(answer: &Answer, shape: &Shape) -> Vec<(&'static str, Value)> {
    let mut events = Vec::new();
    let delta = |index: usize, delta: Value| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let stop = |index: usize| {
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    };
    match answer {
        Answer::Text(text) => {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
            for piece in chunks(text, shape.options.chunk_size) {
                events.push(delta(0, json!({"type": "text_delta", "text": piece})));
            }
            events.push(stop(0));
        }
        Answer::ToolCalls(calls) => {
            for (index, call) in calls.iter().enumerate() {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {
                        "type": "tool_use", "id": call.id, "name": call.name, "input": {},
                    }}),
                ));
                for piece in argument_pieces(&call.arguments, shape.options.chunk_size) {
                    events.push(delta(
                        index,
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
                events.push(stop(index));
            }
        }
    }
    events
}

/// The events of a hostile reply as a Messages stream.
pub(crate) fn hostile(hostile: &Hostile, shape: &Shape) -> Plan {
    let event = |data: Value| {
        let name = data["type"].as_str().unwrap_or("unknown").to_owned();
        sse(Some(&name), &data.to_string())
    };
    let text_delta = |text: &str| {
        event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        )
    };
    let text_start = || {
        event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
    };
    let (_, output_tokens) = shape.options.usage;
    let mut plan = Plan {
        head: vec![event(message_start(shape))],
        ..Plan::default()
    };
    match hostile {
        Hostile::EndlessText(piece) => {
            plan.head.push(text_start());
            plan.repeat = Some(text_delta(piece));
        }
        Hostile::Trickle(piece, every) => {
            plan.head.push(text_start());
            plan.repeat = Some(text_delta(piece));
            plan.every = Some(*every);
        }
        Hostile::EndlessToolArguments(piece) => {
            plan.head.push(event(json!({"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": format!("toolu_endless_{}", shape.seq), "name": "endless", "input": {},
            }})));
            plan.repeat = Some(event(
                json!({"type": "content_block_delta", "index": 0, "delta": {
                    "type": "input_json_delta", "partial_json": piece,
                }}),
            ));
        }
        Hostile::Stall(text) => {
            plan.head.push(text_start());
            plan.head.push(text_delta(text));
            plan.stall = true;
        }
        Hostile::HugeChunk(size) => {
            plan.head.push(text_start());
            plan.head.push(text_delta(&"x".repeat(*size)));
            plan.tail = vec![
                event(json!({"type": "content_block_stop", "index": 0})),
                event(json!({
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                    "usage": {"output_tokens": output_tokens},
                })),
                event(json!({"type": "message_stop"})),
            ];
        }
    }
    plan
}
