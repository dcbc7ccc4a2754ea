//! `ExecuteRun`: the loop that lets a model use the MCP tools of its agent.
//!
//! A run discovers the agent's integrations once and concurrently, offers the
//! model their tools, runs the model's tool calls concurrently (results in
//! call order), and loops until the model answers without tool calls, a
//! client-side tool is called (the run pauses) or the step limit is reached.
//! Every message is stored before its event is sent; whatever a tool does
//! becomes text for the model, never a failed run.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt as _, stream};
use serde_json::{Map, Value};
use switchboard_db::now_millis;
use tokio::sync::mpsc;

use super::{
    builtins::{BuiltinContext, Builtins, RETRIEVE_RESOURCE},
    entities::{
        Agent, Message, Part, PendingCall, Role, Run, RunStatus, Thread, ToolTarget, Usage, new_id,
    },
    error::RunsError,
    history::{HistoryLimits, keep_window, to_chat},
    input::InputLimits,
    model::{ChatRequest, ModelEvent, ModelProvider, ToolCall},
    ports::{Caller, Capabilities, McpPort, RunsRepository},
    texts,
    toolset::{Toolset, assemble},
};

/// Looks up a configured model provider by name.
pub trait ModelProviders: Send + Sync + 'static {
    /// The provider called `name`.
    fn provider(&self, name: &str) -> Option<Arc<dyn ModelProvider>>;
}

/// Limits of runs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Model calls per run when the agent sets none.
    pub default_max_steps: u32,
    /// Time each integration's discovery may take.
    pub discovery_timeout: Duration,
    /// Time one tool call may take.
    pub tool_timeout: Duration,
    /// Tool calls of one turn run at once.
    pub max_parallel_tools: usize,
    /// Output-token limit sent with every model request.
    pub max_output_tokens: u32,
    /// How much of the thread a model request carries.
    pub history: HistoryLimits,
    /// How large a run's input may be.
    pub input: InputLimits,
}

/// What kind of tool a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// An MCP tool.
    Mcp,
    /// A client-side tool.
    Client,
    /// A built-in tool.
    Builtin,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallStatus {
    /// It succeeded.
    Succeeded,
    /// It reported an error.
    Failed,
    /// It timed out.
    TimedOut,
    /// The model named an unknown tool.
    NotFound,
}

/// Something that happened in a run.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The run started.
    Started(Run),
    /// The model produced text.
    TextDelta(String),
    /// A message was stored.
    MessageCreated(Message),
    /// A tool call started.
    ToolCallStarted {
        /// The call.
        call: ToolCall,
        /// What runs it.
        kind: ToolKind,
    },
    /// A tool call finished.
    ToolCallFinished {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// How it ended.
        status: ToolCallStatus,
        /// What the model was told.
        result: String,
    },
    /// An integration was skipped.
    DiscoveryFailed {
        /// Its id.
        integration_id: String,
        /// Why.
        error: String,
    },
    /// The run paused for client tool calls.
    ClientToolCallsRequired(Vec<PendingCall>),
    /// Tokens of one model call and the total.
    Usage {
        /// This call.
        call: Usage,
        /// The run so far.
        total: Usage,
    },
    /// The run ended without failing.
    Completed(Run),
    /// The run failed.
    Failed {
        /// The run.
        run: Run,
        /// Why.
        error: String,
    },
}

/// An event with its position in the run's stream.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The run.
    pub run_id: String,
    /// Position, from 1.
    pub sequence: i64,
    /// The event.
    pub event: RunEvent,
}

/// The result of one client-side tool call.
#[derive(Debug, Clone)]
pub struct ClientResult {
    /// The call it answers.
    pub tool_call_id: String,
    /// Text for the model.
    pub content: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// What a run starts from.
#[derive(Debug, Clone)]
pub enum RunInput {
    /// A new user message.
    UserMessage(String),
    /// The results of the client tool calls a paused run waits for.
    ClientToolResults {
        /// The paused run.
        run_id: String,
        /// The results.
        results: Vec<ClientResult>,
    },
}

/// Ids of the runs this process is executing, for heartbeats.
#[derive(Debug, Clone, Default)]
pub struct ActiveRuns(Arc<Mutex<HashSet<String>>>);

impl ActiveRuns {
    /// The ids, now.
    pub fn ids(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn add(&self, id: &str) {
        if let Ok(mut set) = self.0.lock() {
            set.insert(id.to_owned());
        }
    }

    fn remove(&self, id: &str) {
        if let Ok(mut set) = self.0.lock() {
            set.remove(id);
        }
    }
}

/// Runs agents.
#[derive(Clone)]
pub struct Orchestrator {
    repo: Arc<dyn RunsRepository>,
    mcp: Arc<dyn McpPort>,
    models: Arc<dyn ModelProviders>,
    builtins: Arc<Builtins>,
    settings: RunSettings,
    active: ActiveRuns,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Sends a run's events, numbering them.
struct Emitter {
    tx: mpsc::Sender<Envelope>,
    run_id: String,
    sequence: i64,
}

impl Emitter {
    /// False when the client has gone.
    async fn emit(&mut self, event: RunEvent) -> bool {
        self.sequence += 1;
        self.tx
            .send(Envelope {
                run_id: self.run_id.clone(),
                sequence: self.sequence,
                event,
            })
            .await
            .is_ok()
    }
}

/// Everything a started run needs.
struct RunContext {
    caller: Caller,
    thread: Thread,
    agent: Agent,
    provider: Arc<dyn ModelProvider>,
    /// The stored messages the run starts from.
    input: Vec<Message>,
}

/// A run stopped because its client went away.
struct Disconnected;

/// Gives `messages` their stored `seq`s.
fn numbered(messages: &mut [Message], seqs: Vec<i64>) {
    for (message, seq) in messages.iter_mut().zip(seqs) {
        message.seq = seq;
    }
}

fn parse_arguments(raw: &str) -> Result<Map<String, Value>, String> {
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("got {}", json_kind(&other))),
        Err(error) => Err(error.to_string()),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Orchestrator {
    /// An orchestrator over its ports.
    pub fn new(
        repo: Arc<dyn RunsRepository>,
        mcp: Arc<dyn McpPort>,
        models: Arc<dyn ModelProviders>,
        builtins: Arc<Builtins>,
        settings: RunSettings,
        active: ActiveRuns,
    ) -> Self {
        Self {
            repo,
            mcp,
            models,
            builtins,
            settings,
            active,
        }
    }

    /// Checks the request, records the run, and starts it on a task. The
    /// returned stream carries its events; dropping it cancels the run.
    pub async fn start(
        &self,
        caller: Caller,
        thread_id: &str,
        input: RunInput,
    ) -> Result<mpsc::Receiver<Envelope>, RunsError> {
        // Checked first: input past a limit is refused before anything is
        // read or stored.
        self.settings.input.check(&input)?;
        let principal = &caller.principal;
        let (thread, agent) = self
            .repo
            .get_thread_with_agent(&principal.org_id, &principal.user_id, thread_id)
            .await?
            .ok_or(RunsError::NotFound("thread"))?;
        let agent = agent.ok_or_else(|| {
            RunsError::FailedPrecondition("the thread's agent was deleted".into())
        })?;
        let provider = self
            .models
            .provider(&agent.config.provider)
            .ok_or_else(|| {
                RunsError::FailedPrecondition(format!(
                    "the model provider `{}` of the agent is not configured",
                    agent.config.provider
                ))
            })?;
        let now = now_millis();
        let (run, input) = match input {
            RunInput::UserMessage(text) => {
                let run = Run {
                    id: new_id(),
                    thread_id: thread.id.clone(),
                    agent_id: agent.id.clone(),
                    status: RunStatus::Running,
                    steps: 0,
                    usage: Usage::default(),
                    error: None,
                    bindings: Vec::new(),
                    pending: Vec::new(),
                    created_at: now,
                    updated_at: now,
                };
                let mut input =
                    vec![self.message(&run, Role::User, vec![Part::Text { text }], now)];
                let seqs = self.repo.start_run_with(&run, &input).await?;
                numbered(&mut input, seqs);
                (run, input)
            }
            RunInput::ClientToolResults { run_id, results } => {
                let mut run = self
                    .repo
                    .get_run(&thread.id, &run_id)
                    .await?
                    .ok_or(RunsError::NotFound("run"))?;
                if run.status != RunStatus::RequiresAction {
                    return Err(RunsError::FailedPrecondition(
                        "the run is not waiting for client tool results".into(),
                    ));
                }
                let given: HashSet<&str> =
                    results.iter().map(|r| r.tool_call_id.as_str()).collect();
                let missing: Vec<_> = run
                    .pending
                    .iter()
                    .filter(|p| !given.contains(p.id.as_str()))
                    .map(|p| p.id.clone())
                    .collect();
                if !missing.is_empty() {
                    return Err(RunsError::invalid(
                        "client_tool_results.results",
                        format!("results are missing for tool calls {}", missing.join(", ")),
                    ));
                }
                if !self.repo.resume_run(&run.id, now).await? {
                    return Err(RunsError::FailedPrecondition(
                        "the run is not waiting for client tool results".into(),
                    ));
                }
                run.status = RunStatus::Running;
                run.updated_at = now;
                let parts = run
                    .pending
                    .iter()
                    .filter_map(|pending| {
                        results
                            .iter()
                            .find(|r| r.tool_call_id == pending.id)
                            .map(|r| Part::ToolResult {
                                tool_call_id: pending.id.clone(),
                                name: pending.name.clone(),
                                content: r.content.clone(),
                                is_error: r.is_error,
                            })
                    })
                    .collect();
                // Cleared in storage with the run's next save.
                run.pending.clear();
                let mut input = vec![self.message(&run, Role::Tool, parts, now)];
                let seqs = self.repo.append_messages(&run.thread_id, &input).await?;
                numbered(&mut input, seqs);
                (run, input)
            }
        };

        let (tx, rx) = mpsc::channel(64);
        let context = RunContext {
            caller,
            thread,
            agent,
            provider,
            input,
        };
        let this = self.clone();
        self.active.add(&run.id);
        tokio::spawn(async move { this.drive(context, run, tx).await });
        Ok(rx)
    }

    /// Runs to the end, or until the client disconnects.
    async fn drive(&self, context: RunContext, mut run: Run, tx: mpsc::Sender<Envelope>) {
        let run_id = run.id.clone();
        let mut emitter = Emitter {
            tx: tx.clone(),
            run_id: run_id.clone(),
            sequence: 0,
        };
        let cancelled = tokio::select! {
            outcome = self.execute(context, &mut run, &mut emitter) => outcome.is_err(),
            () = tx.closed() => true,
        };
        if cancelled {
            // Dropping the run's future above stopped the model stream and
            // the tool calls in flight. A run still running in storage is
            // saved as cancelled, with what this task knew of it (steps,
            // usage, tools); one whose end was stored before the client left
            // keeps it.
            match self.repo.find_run(&run_id).await {
                Ok(Some(stored)) if stored.status == RunStatus::Running => {
                    run.status = RunStatus::Cancelled;
                    if let Err(error) = self.save(&mut run).await {
                        tracing::error!(run_id = %run_id, error = %error, "failed to record a cancelled run");
                    }
                    tracing::info!(run_id = %run_id, "run cancelled: the client disconnected");
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(run_id = %run_id, error = %error, "failed to load a cancelled run")
                }
            }
        }
        self.active.remove(&run_id);
    }

    async fn save(&self, run: &mut Run) -> Result<(), RunsError> {
        run.updated_at = now_millis();
        self.repo.update_run(run).await?;
        Ok(())
    }

    /// A new message of `run`'s thread.
    fn message(&self, run: &Run, role: Role, parts: Vec<Part>, created_at: i64) -> Message {
        Message {
            id: new_id(),
            thread_id: run.thread_id.clone(),
            run_id: Some(run.id.clone()),
            seq: 0,
            role,
            parts,
            created_at,
        }
    }

    /// Stores `messages` in one write, with the run's state when `save_run`,
    /// then sends their events.
    async fn store(
        &self,
        emitter: &mut Emitter,
        history: &mut Vec<Message>,
        run: &mut Run,
        messages: Vec<(Role, Vec<Part>)>,
        save_run: bool,
    ) -> Result<Result<(), Disconnected>, RunsError> {
        let created_at = now_millis();
        let mut messages: Vec<Message> = messages
            .into_iter()
            .map(|(role, parts)| self.message(run, role, parts, created_at))
            .collect();
        let seqs = if save_run {
            run.updated_at = created_at;
            self.repo.update_run_with(run, &messages).await?
        } else {
            self.repo.append_messages(&run.thread_id, &messages).await?
        };
        numbered(&mut messages, seqs);
        history.extend(messages.iter().cloned());
        for message in messages {
            if !emitter.emit(RunEvent::MessageCreated(message)).await {
                return Ok(Err(Disconnected));
            }
        }
        Ok(Ok(()))
    }

    /// The run's body; `Err` only when the client disconnected. Failures are
    /// recorded on the run and reported as a `Failed` event.
    async fn execute(
        &self,
        context: RunContext,
        run: &mut Run,
        emitter: &mut Emitter,
    ) -> Result<(), Disconnected> {
        let RunContext {
            caller,
            thread,
            agent,
            provider,
            input,
        } = context;
        match self
            .execute_steps(&caller, &thread, &agent, provider, run, input, emitter)
            .await
        {
            Ok(outcome) => outcome,
            Err(error) => {
                let message = match &error {
                    RunsError::Internal(source) => {
                        tracing::error!(run_id = %run.id, error = ?source, "run failed");
                        "internal error".to_owned()
                    }
                    other => other.to_string(),
                };
                run.status = RunStatus::Failed;
                run.error = Some(message.clone());
                if let Err(error) = self.save(run).await {
                    tracing::error!(run_id = %run.id, error = %error, "failed to record a failed run");
                }
                emitter
                    .emit(RunEvent::Failed {
                        run: run.clone(),
                        error: message,
                    })
                    .await;
                Ok(())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn execute_steps(
        &self,
        caller: &Caller,
        thread: &Thread,
        agent: &Agent,
        provider: Arc<dyn ModelProvider>,
        run: &mut Run,
        input: Vec<Message>,
        emitter: &mut Emitter,
    ) -> Result<Result<(), Disconnected>, RunsError> {
        macro_rules! emit {
            ($event:expr) => {
                if !emitter.emit($event).await {
                    return Ok(Err(Disconnected));
                }
            };
        }
        emit!(RunEvent::Started(run.clone()));
        for message in input {
            emit!(RunEvent::MessageCreated(message));
        }
        // Reading the history (the input included), discovering the
        // integrations and reading the thread's data sources do not depend on
        // each other.
        let (history, (capabilities, failed), mut sources) = tokio::join!(
            self.repo.recent_messages(&thread.id, self.settings.history),
            self.discover(caller, agent),
            self.builtins.sources(&thread.id),
        );
        // Kept up to date as this run stores messages, so a step does not
        // read it back.
        let mut history = history?;
        macro_rules! stored {
            ($messages:expr, $save_run:expr) => {
                if self
                    .store(emitter, &mut history, run, $messages, $save_run)
                    .await?
                    .is_err()
                {
                    return Ok(Err(Disconnected));
                }
            };
        }
        for (integration_id, error) in &failed {
            emit!(RunEvent::DiscoveryFailed {
                integration_id: integration_id.clone(),
                error: error.clone(),
            });
        }
        let system = self.system_prompt(agent, &capabilities, &failed);
        let max_steps = match agent.config.max_steps {
            0 => self.settings.default_max_steps,
            n => n,
        };
        let builtin_context = BuiltinContext {
            caller: caller.clone(),
            thread_id: thread.id.clone(),
            capabilities: Arc::new(capabilities),
        };
        // The offered tools, kept until a CSV import changes them.
        let mut offered: Option<Arc<Toolset>> = None;

        loop {
            if run.steps >= i64::from(max_steps) {
                run.status = RunStatus::MaxSteps;
                self.save(run).await?;
                emit!(RunEvent::Completed(run.clone()));
                return Ok(Ok(()));
            }
            // Assembled again after a CSV import: it makes `source_query`
            // available to the next step.
            let toolset = match &offered {
                Some(toolset) => Arc::clone(toolset),
                None => {
                    let toolset = Arc::new(assemble(
                        self.builtins.specs(agent, &sources),
                        &agent.config.client_tools,
                        &builtin_context.capabilities,
                        &agent.config.tool_filters,
                    ));
                    // Saved with the run's next state change.
                    run.bindings.clone_from(&toolset.bindings);
                    offered = Some(Arc::clone(&toolset));
                    toolset
                }
            };
            // The history grows with every step; only its newest part is
            // sent, and kept.
            keep_window(&mut history, self.settings.history)?;
            let request = ChatRequest {
                model: agent.config.model.clone(),
                system: system.clone(),
                messages: to_chat(&history),
                tools: Arc::clone(&toolset.specs),
                max_tokens: self.settings.max_output_tokens,
            };
            let mut stream = provider.stream(request).await.map_err(|e| {
                RunsError::FailedPrecondition(format!("the model call failed: {e}"))
            })?;
            let mut text = String::new();
            let mut calls = Vec::new();
            while let Some(event) = stream.next().await {
                match event.map_err(|e| {
                    RunsError::FailedPrecondition(format!("the model call failed: {e}"))
                })? {
                    ModelEvent::TextDelta(delta) => {
                        text.push_str(&delta);
                        emit!(RunEvent::TextDelta(delta));
                    }
                    ModelEvent::ToolCall(call) => calls.push(call),
                    ModelEvent::Usage(usage) => {
                        let call = Usage {
                            input_tokens: i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
                            output_tokens: i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
                        };
                        run.usage.input_tokens += call.input_tokens;
                        run.usage.output_tokens += call.output_tokens;
                        emit!(RunEvent::Usage {
                            call,
                            total: run.usage
                        });
                    }
                    ModelEvent::Finished { .. } => {}
                }
            }
            drop(stream);
            // Saved with the run's next state change; a crash loses only the
            // count of a run that is then marked interrupted anyway.
            run.steps += 1;

            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(Part::Text { text });
            }
            parts.extend(calls.iter().map(|c| Part::ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            }));
            if calls.is_empty() {
                // The answer and the run's end are saved together.
                run.status = RunStatus::Completed;
                let answer = if parts.is_empty() {
                    Vec::new()
                } else {
                    vec![(Role::Assistant, parts)]
                };
                stored!(answer, true);
                emit!(RunEvent::Completed(run.clone()));
                return Ok(Ok(()));
            }

            let (client_calls, server_calls): (Vec<_>, Vec<_>) = calls
                .into_iter()
                .partition(|c| matches!(toolset.target(&c.name), Some(ToolTarget::Client)));
            for call in &server_calls {
                let kind = match toolset.target(&call.name) {
                    Some(ToolTarget::Builtin) => ToolKind::Builtin,
                    _ => ToolKind::Mcp,
                };
                emit!(RunEvent::ToolCallStarted {
                    call: call.clone(),
                    kind,
                });
            }
            let results: Vec<(ToolCall, String, bool, ToolCallStatus)> = stream::iter(server_calls)
                .map(|call| {
                    let toolset = &*toolset;
                    let builtin_context = &builtin_context;
                    async move {
                        let (text, is_error, status) = self
                            .call_tool(caller, thread, toolset, builtin_context, &call)
                            .await;
                        (call, text, is_error, status)
                    }
                })
                .buffered(self.settings.max_parallel_tools.max(1))
                .collect()
                .await;
            let mut result_parts = Vec::with_capacity(results.len());
            for (call, text, is_error, status) in results {
                emit!(RunEvent::ToolCallFinished {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    status,
                    result: text.clone(),
                });
                result_parts.push(Part::ToolResult {
                    tool_call_id: call.id,
                    name: call.name,
                    content: text,
                    is_error,
                });
            }
            let imported = result_parts.iter().any(|part| {
                matches!(part, Part::ToolResult { name, is_error: false, .. } if name == RETRIEVE_RESOURCE)
            });
            // The model's tool calls are stored with their results, in one
            // write: the thread never holds a call that this service ran
            // without its result, which no later model request could be
            // sent with. Client-side calls wait for theirs in a paused run.
            let mut turn = vec![(Role::Assistant, parts)];
            if !result_parts.is_empty() {
                turn.push((Role::Tool, result_parts));
            }
            if client_calls.is_empty() {
                stored!(turn, false);
            } else {
                // The pause is saved with the turn.
                run.status = RunStatus::RequiresAction;
                run.pending = client_calls
                    .into_iter()
                    .map(|c| PendingCall {
                        id: c.id,
                        name: c.name,
                        arguments: c.arguments,
                    })
                    .collect();
                stored!(turn, true);
            }
            if imported {
                sources = self.builtins.sources(&thread.id).await;
                offered = None;
            }
            if run.status == RunStatus::RequiresAction {
                emit!(RunEvent::ClientToolCallsRequired(run.pending.clone()));
                emit!(RunEvent::Completed(run.clone()));
                return Ok(Ok(()));
            }
        }
    }

    /// Discovers every integration of the agent at once, each with its own
    /// deadline; failures are logged, reported and skipped.
    async fn discover(
        &self,
        caller: &Caller,
        agent: &Agent,
    ) -> (Vec<Capabilities>, Vec<(String, String)>) {
        let ids = &agent.config.mcp_integration_ids;
        if ids.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let timeout = self.settings.discovery_timeout;
        let outcomes = futures::future::join_all(ids.iter().map(|id| async move {
            let outcome =
                match tokio::time::timeout(timeout, self.mcp.discover(caller, id, timeout)).await {
                    Ok(outcome) => outcome.map_err(|e| e.to_string()),
                    Err(_) => Err(format!(
                        "discovery timed out after {}s",
                        timeout.as_secs_f64()
                    )),
                };
            (id.clone(), outcome)
        }))
        .await;
        let mut capabilities = Vec::new();
        let mut failed = Vec::new();
        for (id, outcome) in outcomes {
            match outcome {
                Ok(found) => {
                    tracing::info!(
                        integration_id = %id,
                        tools = found.tools.len(),
                        resources = found.resources.len(),
                        prompts = found.prompts.len(),
                        "integration discovered"
                    );
                    capabilities.push(found);
                }
                Err(error) => {
                    tracing::warn!(integration_id = %id, error = %error, "integration discovery failed; skipping it");
                    failed.push((id, error));
                }
            }
        }
        (capabilities, failed)
    }

    fn system_prompt(
        &self,
        agent: &Agent,
        capabilities: &[Capabilities],
        failed: &[(String, String)],
    ) -> Option<String> {
        let mut sections = Vec::new();
        if !agent.config.instructions.trim().is_empty() {
            sections.push(agent.config.instructions.clone());
        }
        if let Some(section) = self.builtins.prompt_section(agent, capabilities) {
            sections.push(section);
        }
        if let Some(note) = texts::integrations_unavailable(failed) {
            sections.push(note);
        }
        (!sections.is_empty()).then(|| sections.join("\n\n"))
    }

    /// Runs one tool call; whatever happens becomes text for the model.
    async fn call_tool(
        &self,
        caller: &Caller,
        thread: &Thread,
        toolset: &Toolset,
        builtin_context: &BuiltinContext,
        call: &ToolCall,
    ) -> (String, bool, ToolCallStatus) {
        let Some(target) = toolset.target(&call.name) else {
            tracing::info!(tool = %call.name, "the model called an unknown tool");
            return (
                texts::tool_not_found(&call.name),
                true,
                ToolCallStatus::NotFound,
            );
        };
        let arguments = match parse_arguments(&call.arguments) {
            Ok(arguments) => arguments,
            Err(error) => {
                return (
                    texts::invalid_arguments(&error),
                    true,
                    ToolCallStatus::Failed,
                );
            }
        };
        match target {
            ToolTarget::Mcp {
                integration_id,
                server_tool_name,
            } => {
                let outcome = self
                    .mcp
                    .execute_tool(
                        caller,
                        integration_id,
                        server_tool_name,
                        arguments,
                        &thread.id,
                        self.settings.tool_timeout,
                    )
                    .await;
                match outcome {
                    Ok(output) => {
                        let (text, is_error) = texts::tool_output(&output);
                        tracing::info!(integration_id = %integration_id, tool = %server_tool_name, is_error, "MCP tool executed");
                        let status = if !is_error {
                            ToolCallStatus::Succeeded
                        } else if output.error_message.contains("did not answer within") {
                            ToolCallStatus::TimedOut
                        } else {
                            ToolCallStatus::Failed
                        };
                        (text, is_error, status)
                    }
                    Err(error) => {
                        tracing::warn!(integration_id = %integration_id, tool = %server_tool_name, error = %error, "MCP tool call failed");
                        let status = match error {
                            super::ports::McpCallError::Timeout => ToolCallStatus::TimedOut,
                            super::ports::McpCallError::Failed(_) => ToolCallStatus::Failed,
                        };
                        (texts::mcp_call_failed(&error), true, status)
                    }
                }
            }
            ToolTarget::Builtin => {
                let (text, is_error) = self
                    .builtins
                    .execute(builtin_context, &call.name, arguments)
                    .await;
                let status = if is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Succeeded
                };
                (text, is_error, status)
            }
            ToolTarget::Client => (
                texts::tool_not_found(&call.name),
                true,
                ToolCallStatus::NotFound,
            ),
        }
    }
}
