//! A real OpenAI- and Anthropic-compatible model server that answers from a
//! script.
//!
//! End-to-end tests and the local demo point Switchboard's model providers at
//! it instead of a hosted model: [`ScriptedModel::start`] replies with the
//! given [`Turn`]s in order, [`ScriptedModel::start_looping`] answers every
//! request with the same fixed behaviour. It serves
//! `POST /v1/chat/completions` (OpenAI Chat Completions) and
//! `POST /v1/messages` (Anthropic Messages), streamed or not, and records
//! every request it receives. [`Turn::Hostile`] replies misbehave once the
//! headers are out, to test clients' stream limits.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod anthropic;
mod hostile;
mod openai;
mod schemas;
mod script;
mod server;

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use crate::hostile::Hostile;
use crate::server::{Behaviour, State};

/// What every request gets once a script has run out.
pub const EXHAUSTED_REPLY: &str = "script exhausted";

/// How long [`ScriptedModel::shutdown`] waits for open connections before it
/// drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// One scripted reply of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Answer with text (streamed in several chunks when the request asks for
    /// streaming).
    Text(String),
    /// Ask for tool calls (several = parallel tool calls); arguments are raw
    /// JSON text as the model would emit them (may be invalid JSON on
    /// purpose).
    ToolCalls(Vec<ScriptedToolCall>),
    /// Answer with text built from the request: `template` with
    /// `{last_tool_result}` replaced by the content of the last tool-result
    /// message of the request (OpenAI `role: tool` message content /
    /// Anthropic `tool_result` block content, as text) and `{tool_results}`
    /// by all tool results of the final turn (those after the last assistant
    /// message) joined with `"\n"`.
    FromToolResults(String),
    /// Fail with this HTTP status and body; `retry_after` sets the
    /// `Retry-After` header (seconds).
    ///
    /// The body is sent as-is (as JSON when it parses as JSON, as an event
    /// stream when it starts with `data:` or `event:`), so a `200` error turn
    /// can also deliver a hand-made, malformed stream.
    Error {
        /// HTTP status code.
        status: u16,
        /// Response body, verbatim.
        body: String,
        /// Value of the `Retry-After` header in seconds, if any.
        retry_after: Option<u64>,
    },
    /// Wait this long before answering with the inner turn (for cancellation
    /// and timeout tests).
    Delay(Duration, Box<Turn>),
    /// Start a stream that misbehaves after its headers: endless, stalled or
    /// with one enormous event.
    Hostile(Hostile),
}

/// One tool call the model asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedToolCall {
    /// Call id the client must echo in the tool result.
    pub id: String,
    /// Name of the tool to call.
    pub name: String,
    /// Arguments as raw JSON text, exactly as sent on the wire.
    pub arguments: String,
}

impl ScriptedToolCall {
    /// A tool call with these parts.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// The rule a looping server answers every request with: while the request
/// offers `tool_name` and holds fewer than `rounds` tool results since the
/// user last spoke → one call to it with `arguments`; else, if the last
/// message is a tool result → `Text("done: {last_tool_result}")`; else
/// `Text(reply)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Looping {
    /// Tool to call, when offered.
    pub tool_name: Option<String>,
    /// Arguments of that call, as raw JSON text.
    pub arguments: String,
    /// Text to answer when no tool is called and none was.
    pub reply: String,
    /// Tool calls (one per model turn) before the model answers.
    pub rounds: usize,
}

impl Looping {
    /// One call to `tool_name` with `arguments`, then an answer; `reply`
    /// when the tool is not offered.
    pub fn new(
        tool_name: Option<String>,
        arguments: impl Into<String>,
        reply: impl Into<String>,
    ) -> Self {
        Self {
            tool_name,
            arguments: arguments.into(),
            reply: reply.into(),
            rounds: 1,
        }
    }

    /// The same with `rounds` tool calls before the answer.
    pub fn rounds(self, rounds: usize) -> Self {
        Self { rounds, ..self }
    }
}

/// A fixed sequence of tool calls, replayed after every user message: the
/// request holding `n` tool results since the user last spoke gets a call to
/// `steps[n]`, offered or not; once every step has its result, the model
/// answers with `answer`, a template as in [`Turn::FromToolResults`] that may
/// also name `{result:N}`, the Nth tool result since the user spoke (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The calls, in order, one per model turn.
    pub steps: Vec<PlanStep>,
    /// The answer's template.
    pub answer: String,
}

/// One call of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// Name of the tool to call.
    pub tool_name: String,
    /// Arguments as raw JSON text.
    pub arguments: String,
}

impl PlanStep {
    /// A step calling `tool_name` with `arguments`.
    pub fn new(tool_name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            tool_name: tool_name.into(),
            arguments: arguments.into(),
        }
    }
}

/// How replies are shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOptions {
    /// Input and output tokens reported with every reply.
    pub usage: (u64, u64),
    /// Characters per streamed text or argument chunk (at least 1).
    pub chunk_size: usize,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        Self {
            usage: (10, 5),
            chunk_size: 8,
        }
    }
}

/// A running scripted model server.
///
/// Clones share the same server and recorded requests. The server stops on
/// [`ScriptedModel::shutdown`], or when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    addr: SocketAddr,
    state: Arc<State>,
    handle: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    cancel: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
    _stop_on_drop: DropGuard,
}

impl ScriptedModel {
    /// Starts on 127.0.0.1:0 answering `turns` in order; after the script
    /// runs out, every request gets `Turn::Text("script exhausted")`.
    /// Accepted sockets have `TCP_NODELAY`.
    pub async fn start(turns: Vec<Turn>) -> anyhow::Result<Self> {
        Self::start_with(turns, ScriptOptions::default()).await
    }

    /// Like [`ScriptedModel::start`], with reply options.
    pub async fn start_with(turns: Vec<Turn>, options: ScriptOptions) -> anyhow::Result<Self> {
        Self::serve(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            Behaviour::Script(Mutex::new(turns.into())),
            options,
        )
        .await
    }

    /// A server that answers every request instantly with the same fixed
    /// [`Looping`] rule, for benchmarks and the demo.
    pub async fn start_looping(rule: Looping) -> anyhow::Result<Self> {
        Self::start_looping_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), rule).await
    }

    /// [`ScriptedModel::start_looping`] on a fixed address (port 0 picks a
    /// free port), as the `scripted-model` binary runs it.
    pub async fn start_looping_on(addr: SocketAddr, rule: Looping) -> anyhow::Result<Self> {
        Self::serve(addr, Behaviour::Looping(rule), ScriptOptions::default()).await
    }

    /// A server that answers every conversation with the same [`Plan`], on
    /// a fixed address (port 0 picks a free port), as the `scripted-model`
    /// binary runs it with `--step`.
    pub async fn start_plan_on(addr: SocketAddr, plan: Plan) -> anyhow::Result<Self> {
        Self::serve(addr, Behaviour::Plan(plan), ScriptOptions::default()).await
    }

    async fn serve(
        addr: SocketAddr,
        behaviour: Behaviour,
        options: ScriptOptions,
    ) -> anyhow::Result<Self> {
        let cancel = CancellationToken::new();
        let state = Arc::new(State::new(behaviour, options, cancel.clone()));
        let (addr, task) = server::spawn(addr, Arc::clone(&state), cancel.clone()).await?;
        Ok(Self {
            addr,
            state,
            handle: Arc::new(Handle {
                _stop_on_drop: cancel.clone().drop_guard(),
                cancel,
                task: Mutex::new(Some(task)),
            }),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// OpenAI base URL, e.g. `http://127.0.0.1:PORT/v1`. Anthropic clients use
    /// the same host with the path `/v1/messages`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request body received, in order (both APIs).
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.state.requests()
    }

    /// The headers of every request received, in the order of
    /// [`ScriptedModel::requests`].
    pub fn request_headers(&self) -> Vec<http::HeaderMap> {
        self.state.request_headers()
    }

    /// Stops accepting connections and waits until the server has stopped;
    /// pending [`Turn::Delay`]s end early. Other clones stop working too.
    pub async fn shutdown(self) {
        self.handle.cancel.cancel();
        let task = self
            .handle
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut task) = task else {
            return;
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
            .await
            .is_err()
        {
            tracing::warn!("connections still open after the grace period; dropping them");
            task.abort();
            // The task is gone either way; its outcome says nothing more.
            let _ = task.await;
        }
    }
}
