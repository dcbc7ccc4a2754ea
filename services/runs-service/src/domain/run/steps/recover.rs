//! A run taken over from a replica that stopped goes on from what it
//! recorded: the tool calls the model made whose results are not stored
//! are resolved before the next model turn. A call whose result the
//! stopped replica recorded among its events is not made again; a call of
//! a tool the agent lists as idempotent (or one that was waiting for an
//! approval, so never ran) is made again; any other may have reached its
//! server, so it is not made again and the model is told it may have run.

use std::collections::{HashMap, HashSet};

use super::{Running, Step, StepLoop, tools::Ran};
use crate::domain::{
    entities::{Agent, Message, Part, PendingCall, Role, Run},
    events::{RunEvent, ToolCallStatus},
    ids::RunId,
    model::ToolCall,
    recovery::Continuation,
    run::{context::Takeover, emitter::Stop},
    texts::may_have_run,
    tools::{SEARCH_TOOLS, called_tool},
};

/// Stored events read per page while looking for recorded results.
const EVENTS_PAGE: u32 = 500;

/// How a continued run resolves the calls it left without results.
pub(super) struct Recovery {
    /// What the run's `RunContinued` event tells.
    pub(super) continuation: Continuation,
    /// The calls without a stored result, in the order the model made them.
    calls: Vec<ToolCall>,
    /// Results the stopped replica recorded, by call id.
    recorded: HashMap<String, Part>,
    /// Calls made again.
    repeat: Vec<ToolCall>,
    /// Client tool calls: the run pauses for them.
    client: Vec<ToolCall>,
}

/// Whether `call` may be made again when it may have reached its server:
/// a search (it has no effect), or a tool the agent lists as idempotent,
/// judged by the tool's own name when it was called through `call_tool`.
fn idempotent(agent: &Agent, call: &ToolCall) -> bool {
    match called_tool(call) {
        Some(name) if name == SEARCH_TOOLS => true,
        Some(name) => agent.config.idempotent_tools.contains(&name),
        None => false,
    }
}

impl StepLoop {
    /// Finds the calls run `run` left without results and decides what
    /// becomes of each.
    pub(super) async fn recovery(
        &self,
        run: &Run,
        agent: &Agent,
        takeover: Takeover,
    ) -> Result<Recovery, Stop> {
        let history = self
            .repo
            .recent_messages(run.thread_id, self.settings.history)
            .await?;
        let calls = without_results(&history, run.id);
        let finished = if calls.is_empty() {
            HashMap::new()
        } else {
            self.finished_calls(run.id).await?
        };
        let mut recovery = Recovery {
            continuation: Continuation {
                after_sequence: takeover.after_sequence,
                takeovers: takeover.takeovers,
                ..Continuation::default()
            },
            calls: Vec::new(),
            recorded: HashMap::new(),
            repeat: Vec::new(),
            client: Vec::new(),
        };
        let is_client = |name: &str| agent.config.client_tools.iter().any(|t| t.name == name);
        for call in calls {
            let id = call.id.clone();
            match finished.get(&id) {
                _ if is_client(&call.name) => recovery.client.push(call.clone()),
                Some((status, result))
                    if *status != ToolCallStatus::ApprovalRequired
                        && *status != ToolCallStatus::InputRequired =>
                {
                    recovery.recorded.insert(
                        id.clone(),
                        Part::ToolResult {
                            tool_call_id: id.clone(),
                            name: call.name.clone(),
                            content: result.clone(),
                            is_error: *status != ToolCallStatus::Succeeded,
                        },
                    );
                    recovery.continuation.recovered.push(id);
                }
                // Waiting for an approval, it never ran.
                Some((ToolCallStatus::ApprovalRequired, _)) => {
                    recovery.repeat.push(call.clone());
                    recovery.continuation.repeated.push(id);
                }
                _ if idempotent(agent, &call) => {
                    recovery.repeat.push(call.clone());
                    recovery.continuation.repeated.push(id);
                }
                _ => recovery.continuation.unresolved.push(id),
            }
            recovery.calls.push(call);
        }
        Ok(recovery)
    }

    /// How each call of run `run_id` that finished ended, as its stored
    /// events tell (at most the run's bound of stored events).
    async fn finished_calls(
        &self,
        run_id: RunId,
    ) -> Result<HashMap<String, (ToolCallStatus, String)>, Stop> {
        let mut finished = HashMap::new();
        let mut from = 1;
        loop {
            let page = self.repo.run_events(run_id, from, EVENTS_PAGE).await?;
            let full = page.len() == EVENTS_PAGE as usize;
            for envelope in page {
                from = envelope.sequence + 1;
                if let RunEvent::ToolCallFinished {
                    id, status, result, ..
                } = envelope.event
                {
                    finished.insert(id, (status, result));
                }
            }
            if !full {
                return Ok(finished);
            }
        }
    }
}

/// The tool calls of run `run_id` in `history` that have no result.
fn without_results(history: &[Message], run_id: RunId) -> Vec<ToolCall> {
    let of_run = history.iter().filter(|m| m.run_id == Some(run_id));
    let answered: HashSet<&str> = of_run
        .clone()
        .flat_map(|m| &m.parts)
        .filter_map(|part| match part {
            Part::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    of_run
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.parts)
        .filter_map(|part| match part {
            Part::ToolCall {
                id,
                name,
                arguments,
            } if !answered.contains(id.as_str()) => Some(ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            }),
            _ => None,
        })
        .collect()
}

impl Running<'_> {
    /// Resolves the calls the run left without results (see
    /// [`StepLoop::recovery`]) and stores their results in one write; the
    /// run pauses if client calls or approvals wait.
    pub(super) async fn recover(&mut self, plan: Recovery) -> Result<Step, Stop> {
        if plan.calls.is_empty() {
            return Ok(Step::Continue);
        }
        let Recovery {
            continuation,
            calls,
            mut recorded,
            repeat,
            client,
        } = plan;
        let toolset = self.toolset();
        let unresolved: HashSet<&str> =
            continuation.unresolved.iter().map(String::as_str).collect();
        for call in calls.iter().filter(|c| unresolved.contains(c.id.as_str())) {
            self.emitter
                .emit(RunEvent::ToolCallFinished {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    status: ToolCallStatus::MayHaveRun,
                    result: may_have_run(&call.name),
                })
                .await?;
        }
        let ran = self.run_tools(&toolset, repeat).await?;
        for part in ran.parts {
            if let Part::ToolResult { tool_call_id, .. } = &part {
                recorded.insert(tool_call_id.clone(), part);
            }
        }
        let parts = in_call_order(&calls, recorded, &unresolved);
        let mut waiting: Vec<PendingCall> = client
            .into_iter()
            .map(|c| PendingCall {
                id: c.id,
                name: c.name,
                arguments: c.arguments,
                input: None,
                approval: None,
            })
            .collect();
        waiting.extend(ran.waiting);
        self.store_results(Ran {
            parts,
            waiting,
            sources_changed: ran.sources_changed,
        })
        .await
    }
}

/// The results of `calls` in the order the model made them: the recorded or
/// repeated one of each call that has one, the may-have-run one of each
/// unresolved call; calls that wait (client tools, approvals) have none.
fn in_call_order(
    calls: &[ToolCall],
    mut results: HashMap<String, Part>,
    unresolved: &HashSet<&str>,
) -> Vec<Part> {
    calls
        .iter()
        .filter_map(|call| {
            results.remove(&call.id).or_else(|| {
                unresolved
                    .contains(call.id.as_str())
                    .then(|| Part::ToolResult {
                        tool_call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: may_have_run(&call.name),
                        is_error: true,
                    })
            })
        })
        .collect()
}
