//! The HTTP server: routing, request recording and choosing the reply.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use anyhow::Context as _;
use axum::{
    Router,
    body::Bytes,
    extract::State as AxumState,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
    serve::ListenerExt as _,
};
use serde_json::Value;
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::{
    EXHAUSTED_REPLY, Hostile, Looping, Plan, ScriptOptions, ScriptedToolCall, Turn, anthropic,
    hostile, openai, schemas,
    script::{Api, RequestView, render_template},
};

/// How the server picks the turn for a request.
#[derive(Debug)]
pub(crate) enum Behaviour {
    /// Turns in order, then [`EXHAUSTED_REPLY`].
    Script(Mutex<VecDeque<Turn>>),
    /// The same rule for every request; see `ScriptedModel::start_looping`.
    Looping(Looping),
    /// The same calls after every user message; see [`Plan`].
    Plan(Plan),
}

/// What the model says in a successful reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    Text(String),
    ToolCalls(Vec<ScriptedToolCall>),
}

/// A turn with the request-dependent and timed parts settled.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    Answer(Answer),
    Hostile(Hostile),
    Error {
        status: u16,
        body: String,
        retry_after: Option<u64>,
    },
}

/// State shared by the handlers and every `ScriptedModel` clone.
#[derive(Debug)]
pub(crate) struct State {
    behaviour: Behaviour,
    pub(crate) options: ScriptOptions,
    cancel: CancellationToken,
    /// Numbers requests, for response and generated tool-call ids.
    counter: AtomicU64,
    recorded: Mutex<Recorded>,
}

#[derive(Debug, Default)]
struct Recorded {
    bodies: Vec<Value>,
    headers: Vec<HeaderMap>,
}

impl State {
    pub(crate) fn new(
        behaviour: Behaviour,
        options: ScriptOptions,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            behaviour,
            options: ScriptOptions {
                chunk_size: options.chunk_size.max(1),
                ..options
            },
            cancel,
            counter: AtomicU64::new(0),
            recorded: Mutex::new(Recorded::default()),
        }
    }

    pub(crate) fn requests(&self) -> Vec<Value> {
        self.lock_recorded().bodies.clone()
    }

    pub(crate) fn request_headers(&self) -> Vec<HeaderMap> {
        self.lock_recorded().headers.clone()
    }

    // A panicking test thread must not hide what the server recorded, so a
    // poisoned lock is used as it is.
    fn lock_recorded(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the request and returns its sequence number.
    fn record(&self, body: Value, headers: HeaderMap) -> u64 {
        let mut recorded = self.lock_recorded();
        recorded.bodies.push(body);
        recorded.headers.push(headers);
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn next_turn(&self, view: &RequestView, seq: u64) -> Turn {
        match &self.behaviour {
            Behaviour::Script(turns) => turns
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .unwrap_or_else(|| Turn::Text(EXHAUSTED_REPLY.to_owned())),
            Behaviour::Looping(rule) => {
                let offered = rule
                    .tool_name
                    .as_ref()
                    .filter(|name| view.tool_names.contains(name));
                match offered {
                    Some(name) if view.results_since_user < rule.rounds => {
                        Turn::ToolCalls(vec![ScriptedToolCall::new(
                            format!("call_{seq}"),
                            name.clone(),
                            rule.arguments.clone(),
                        )])
                    }
                    _ if view.last_message_is_tool_result => {
                        Turn::FromToolResults("done: {last_tool_result}".to_owned())
                    }
                    _ => Turn::Text(rule.reply.clone()),
                }
            }
            Behaviour::Plan(plan) => match plan.steps.get(view.results_since_user) {
                Some(step) => Turn::ToolCalls(vec![ScriptedToolCall::new(
                    format!("call_{seq}"),
                    step.tool_name.clone(),
                    step.arguments.clone(),
                )]),
                None => Turn::FromToolResults(plan.answer.clone()),
            },
        }
    }

    /// Settles delays and templates; `None` when the server shuts down while
    /// a delay is pending.
    async fn resolve(&self, mut turn: Turn, view: &RequestView) -> Option<Reply> {
        loop {
            turn = match turn {
                Turn::Text(text) => return Some(Reply::Answer(Answer::Text(text))),
                Turn::ToolCalls(calls) => return Some(Reply::Answer(Answer::ToolCalls(calls))),
                Turn::Hostile(hostile) => return Some(Reply::Hostile(hostile)),
                Turn::FromToolResults(template) => {
                    return Some(Reply::Answer(Answer::Text(render_template(
                        &template, view,
                    ))));
                }
                Turn::Error {
                    status,
                    body,
                    retry_after,
                } => {
                    return Some(Reply::Error {
                        status,
                        body,
                        retry_after,
                    });
                }
                Turn::Delay(delay, inner) => {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => *inner,
                        () = self.cancel.cancelled() => return None,
                    }
                }
            };
        }
    }
}

/// Binds `addr` and serves both APIs until `cancel` fires.
pub(crate) async fn spawn(
    addr: SocketAddr,
    state: Arc<State>,
    cancel: CancellationToken,
) -> anyhow::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    // Streamed chunks are small writes that Nagle's algorithm would hold back.
    let listener = listener.tap_io(|stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "failed to set tcp_nodelay on an accepted connection");
        }
    });
    let router = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages))
        .with_state(state);
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await;
        if let Err(error) = served {
            tracing::error!(%error, "scripted model server failed");
        }
    });
    Ok((addr, task))
}

async fn chat_completions(
    AxumState(state): AxumState<Arc<State>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&state, Api::OpenAi, headers, &body).await
}

async fn messages(
    AxumState(state): AxumState<Arc<State>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&state, Api::Anthropic, headers, &body).await
}

/// What a provider answers to a body that is not JSON.
fn invalid_json(api: Api, error: &serde_json::Error) -> Response {
    tracing::warn!(%error, api = api.name(), "request body is not json");
    let body = serde_json::json!({
        "error": {"type": "invalid_request_error", "message": format!("invalid json: {error}")}
    });
    json_response(StatusCode::BAD_REQUEST, body.to_string())
}

/// What the provider answers to a request whose tool schema it refuses
/// (see `schemas`), if it does.
fn schema_refusal(api: Api, request: &Value) -> Option<Response> {
    let body = match api {
        Api::OpenAi => {
            let (param, message) = schemas::openai_refusal(request)?;
            serde_json::json!({"error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": "invalid_function_parameters",
            }})
        }
        Api::Anthropic => serde_json::json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": schemas::anthropic_refusal(request)?},
        }),
    };
    tracing::warn!(api = api.name(), %body, "tool schema refused");
    Some(json_response(StatusCode::BAD_REQUEST, body.to_string()))
}

async fn handle(state: &State, api: Api, headers: HeaderMap, body: &[u8]) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(error) => return invalid_json(api, &error),
    };
    let view = RequestView::of(api, &request);
    let stream = request.get("stream").and_then(Value::as_bool) == Some(true);
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted")
        .to_owned();
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let refusal = schema_refusal(api, &request);
    let seq = state.record(request, headers);
    if let Some(refusal) = refusal {
        // Refused before the model sees the request: no turn is used.
        return refusal;
    }
    let turn = state.next_turn(&view, seq);
    tracing::debug!(api = api.name(), seq, stream, "model request");

    let Some(reply) = state.resolve(turn, &view).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    };
    let answer = match reply {
        Reply::Answer(answer) => answer,
        Reply::Error {
            status,
            body,
            retry_after,
        } => return error_response(status, body, retry_after),
        Reply::Hostile(reply) => {
            let shape = Shape {
                seq,
                model,
                stream: true,
                include_usage,
                options: state.options.clone(),
            };
            let plan = match api {
                Api::OpenAi => openai::hostile(&reply, &shape),
                Api::Anthropic => anthropic::hostile(&reply, &shape),
            };
            return hostile::respond(plan, state.cancel.clone());
        }
    };
    let shape = Shape {
        seq,
        model,
        stream,
        include_usage,
        options: state.options.clone(),
    };
    match api {
        Api::OpenAi => openai::respond(&answer, &shape),
        Api::Anthropic => anthropic::respond(&answer, &shape),
    }
}

/// Everything about a request that shapes the reply, besides the reply.
#[derive(Debug)]
pub(crate) struct Shape {
    pub(crate) seq: u64,
    pub(crate) model: String,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    pub(crate) options: ScriptOptions,
}

pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn error_response(status: u16, body: String, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let content_type = if serde_json::from_str::<Value>(&body).is_ok() {
        "application/json"
    } else if body.starts_with("data:") || body.starts_with("event:") {
        "text/event-stream"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut response = (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Splits `text` into pieces of `size` characters.
pub(crate) fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

/// Splits tool-call arguments into pieces of at most `size` characters, and
/// into at least two pieces whenever there are two characters, so clients
/// always have to reassemble them.
pub(crate) fn argument_pieces(arguments: &str, size: usize) -> Vec<String> {
    let count = arguments.chars().count();
    if count < 2 {
        return vec![arguments.to_owned()];
    }
    chunks(arguments, size.min(count.div_ceil(2)))
}

/// Seconds since the Unix epoch, for `created` fields.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_pieces_are_at_least_two() {
        assert_eq!(argument_pieces("{}", 8), vec!["{", "}"]);
        assert_eq!(argument_pieces("{\"a\":1}", 8), vec!["{\"a\"", ":1}"]);
        assert_eq!(argument_pieces("x", 8), vec!["x"]);
        assert_eq!(argument_pieces("", 8), vec![""]);
        assert_eq!(argument_pieces("abcdefghij", 3).len(), 4);
    }
}
