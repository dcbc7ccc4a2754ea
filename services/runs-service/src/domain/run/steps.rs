//! The step loop: each step streams one model turn, runs the turn's tool
//! calls, and stores the turn; the run ends when the model answers without
//! tool calls, pauses for client tools, or reaches its step limit.

use std::sync::Arc;

use futures::{StreamExt as _, stream};
use switchboard_db::now_millis;

mod telemetry;

use self::telemetry::execute_tool;
use super::{
    Orchestrator, RunEvent, ToolKind,
    events::{Emitter, Stop},
    history::{keep_window, to_chat},
    start::{RunContext, message, numbered},
};
use crate::domain::{
    datasource::DataSource,
    entities::{
        Agent, InputAnswers, Message, Part, PendingCall, PendingInput, Role, Run, RunStatus,
        Thread, Usage,
    },
    error::RunsError,
    model::{ChatRequest, ModelEvent, ToolCall},
    ports::{Caller, ModelProvider},
    tools::{RETRIEVE_RESOURCE, ToolAction, ToolContext, ToolOutcome, ToolRouter, Toolset},
};

/// Whether a run goes on after a step.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Another model turn follows.
    Continue,
    /// The run ended (answered, paused or out of steps), its end stored and
    /// sent.
    Done,
}

/// What a step's tool calls came to.
#[derive(Default)]
struct Ran {
    /// Results for the model, in call order.
    parts: Vec<Part>,
    /// Calls that wait for the run's caller.
    waiting: Vec<PendingCall>,
}

/// An MCP tool call made again with the caller's answers.
pub(super) struct Resumed {
    /// The call as the model made it.
    pub(super) call: ToolCall,
    /// What its server asked.
    pub(super) input: PendingInput,
    /// The caller's answers.
    pub(super) answers: InputAnswers,
}

/// What the model said in one turn.
struct Turn {
    text: String,
    calls: Vec<ToolCall>,
}

impl Turn {
    /// The assistant message's parts: the text, then the calls.
    fn parts(&self) -> Vec<Part> {
        let text = (!self.text.is_empty()).then(|| Part::Text {
            text: self.text.clone(),
        });
        text.into_iter()
            .chain(self.calls.iter().map(|c| Part::ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            }))
            .collect()
    }
}

/// A run between its steps.
struct Running<'a> {
    orchestrator: &'a Orchestrator,
    run: &'a mut Run,
    emitter: &'a mut Emitter,
    agent: &'a Agent,
    provider: &'a dyn ModelProvider,
    /// The thread's newest messages, kept up to date as the run stores
    /// messages, so a step does not read them back.
    history: Vec<Message>,
    tools: ToolContext,
    system: Option<String>,
    max_steps: u32,
    /// The thread's data sources, read again after a CSV import.
    sources: Vec<DataSource>,
    /// The offered tools, kept until a CSV import changes them.
    offered: Option<Arc<Toolset>>,
}

impl Orchestrator {
    /// The run's body.
    pub(super) async fn execute(
        &self,
        mut context: RunContext,
        run: &mut Run,
        emitter: &mut Emitter,
    ) -> Result<(), Stop> {
        emitter.emit(RunEvent::Started(run.clone())).await?;
        for message in &context.input {
            emitter
                .emit(RunEvent::MessageCreated(message.clone()))
                .await?;
        }
        let resumed = std::mem::take(&mut context.resumed);
        let RunContext {
            caller,
            thread,
            agent,
            provider,
            ..
        } = &context;
        let mut running = self
            .prepare(caller, thread, agent, &**provider, run, emitter)
            .await?;
        if running.resume_calls(resumed).await? == Step::Done {
            return Ok(());
        }
        while running.step().await? == Step::Continue {}
        Ok(())
    }

    /// Reads what the steps share: the history, the integrations'
    /// capabilities and the thread's data sources, which do not depend on
    /// each other.
    async fn prepare<'a>(
        &'a self,
        caller: &Caller,
        thread: &Thread,
        agent: &'a Agent,
        provider: &'a dyn ModelProvider,
        run: &'a mut Run,
        emitter: &'a mut Emitter,
    ) -> Result<Running<'a>, Stop> {
        let (history, (capabilities, failed), sources) = tokio::join!(
            self.ports
                .repo
                .recent_messages(&thread.id, self.settings.history),
            self.discover(caller, agent),
            self.ports.tools.sources(&thread.id),
        );
        let history = history?;
        for (integration_id, error) in &failed {
            emitter
                .emit(RunEvent::DiscoveryFailed {
                    integration_id: integration_id.clone(),
                    error: error.clone(),
                })
                .await?;
        }
        let system = Self::system_prompt(agent, &capabilities, &failed);
        let max_steps = match agent.config.max_steps {
            0 => self.settings.default_max_steps,
            n => n,
        };
        Ok(Running {
            orchestrator: self,
            run,
            emitter,
            agent,
            provider,
            history,
            tools: ToolContext {
                caller: caller.clone(),
                thread_id: thread.id.clone(),
                capabilities: Arc::new(capabilities),
            },
            system,
            max_steps,
            sources,
            offered: None,
        })
    }
}

impl Running<'_> {
    /// One model turn and what follows from it.
    async fn step(&mut self) -> Result<Step, Stop> {
        if self.run.steps >= i64::from(self.max_steps) {
            self.run.status = RunStatus::MaxSteps;
            self.orchestrator.save(self.run).await?;
            self.emitter
                .emit(RunEvent::Completed(self.run.clone()))
                .await?;
            return Ok(Step::Done);
        }
        let toolset = self.toolset();
        let turn = self.chat(&toolset).await?;
        // Saved with the turn.
        self.run.steps += 1;
        if turn.calls.is_empty() {
            return self.answered(turn).await;
        }
        // The calls are recorded before any of them runs: whatever happens
        // to this process, the thread holds every call that may have had an
        // effect (one left without a result reads as interrupted).
        self.store(vec![(Role::Assistant, turn.parts())]).await?;
        let (client_calls, server_calls): (Vec<_>, Vec<_>) = turn
            .calls
            .into_iter()
            .partition(|c| ToolRouter::kind(&toolset, &c.name) == Some(ToolKind::Client));
        let mut ran = self.run_tools(&toolset, server_calls).await?;
        // Client calls wait first, in the order the model made them.
        let client = client_calls.into_iter().map(|c| PendingCall {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
            input: None,
        });
        ran.waiting.splice(0..0, client);
        self.store_results(ran).await
    }

    /// The tools offered now: assembled again after a CSV import, which
    /// makes `source_query` available to the next step.
    fn toolset(&mut self) -> Arc<Toolset> {
        if let Some(toolset) = &self.offered {
            return Arc::clone(toolset);
        }
        let toolset = Arc::new(self.orchestrator.ports.tools.toolset(
            self.agent,
            &self.sources,
            &self.tools.capabilities,
        ));
        // Saved with the run's next state change.
        self.run.bindings.clone_from(&toolset.bindings);
        self.offered = Some(Arc::clone(&toolset));
        toolset
    }

    /// Streams one model turn: text is sent as it arrives, tool calls and
    /// usage are collected.
    async fn model_turn(&mut self, toolset: &Toolset) -> Result<Turn, Stop> {
        // The history grows with every step; only its newest part is sent,
        // and kept.
        keep_window(&mut self.history, self.orchestrator.settings.history)?;
        let request = ChatRequest {
            model: self.agent.config.model.clone(),
            system: self.system.clone(),
            messages: to_chat(&self.history),
            tools: Arc::clone(&toolset.specs),
            max_tokens: self.orchestrator.settings.max_output_tokens,
        };
        let model_failed = |e| RunsError::FailedPrecondition(format!("the model call failed: {e}"));
        let mut stream = self.provider.stream(request).await.map_err(model_failed)?;
        let mut turn = Turn {
            text: String::new(),
            calls: Vec::new(),
        };
        while let Some(event) = stream.next().await {
            match event.map_err(model_failed)? {
                ModelEvent::TextDelta(delta) => {
                    turn.text.push_str(&delta);
                    self.emitter.emit(RunEvent::TextDelta(delta)).await?;
                }
                ModelEvent::ToolCall(call) => turn.calls.push(call),
                ModelEvent::Usage(usage) => {
                    let call = Usage {
                        input_tokens: i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
                        output_tokens: i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
                    };
                    self.run.usage.input_tokens += call.input_tokens;
                    self.run.usage.output_tokens += call.output_tokens;
                    let total = self.run.usage;
                    self.emitter.emit(RunEvent::Usage { call, total }).await?;
                }
                ModelEvent::Finished { .. } => {}
            }
        }
        Ok(turn)
    }

    /// The model answered without tool calls: the answer and the run's end
    /// are saved together.
    async fn answered(&mut self, turn: Turn) -> Result<Step, Stop> {
        self.run.status = RunStatus::Completed;
        let parts = turn.parts();
        let answer = if parts.is_empty() {
            Vec::new()
        } else {
            vec![(Role::Assistant, parts)]
        };
        self.store(answer).await?;
        self.emitter
            .emit(RunEvent::Completed(self.run.clone()))
            .await?;
        Ok(Step::Done)
    }

    /// Runs the calls concurrently (at most the parallel-tools limit at
    /// once); their results come back in call order.
    async fn run_tools(&mut self, toolset: &Toolset, calls: Vec<ToolCall>) -> Result<Ran, Stop> {
        for call in &calls {
            let kind = ToolRouter::kind(toolset, &call.name).unwrap_or(ToolKind::Mcp);
            self.emitter
                .emit(RunEvent::ToolCallStarted {
                    call: call.clone(),
                    kind,
                })
                .await?;
        }
        let router = &*self.orchestrator.ports.tools;
        let context = &self.tools;
        let results: Vec<(ToolCall, ToolOutcome)> = stream::iter(calls)
            .map(|call| async move {
                let outcome = execute_tool(&call, router.call(context, toolset, &call)).await;
                (call, outcome)
            })
            .buffered(self.orchestrator.settings.max_parallel_tools.max(1))
            .collect()
            .await;
        self.finished(results).await
    }

    /// Tells the client how each call ended, and sorts the outcomes into
    /// results for the model and calls that wait for the caller's answers.
    async fn finished(&mut self, results: Vec<(ToolCall, ToolOutcome)>) -> Result<Ran, Stop> {
        let mut ran = Ran::default();
        for (call, outcome) in results {
            self.emitter
                .emit(RunEvent::ToolCallFinished {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    status: outcome.status,
                    result: outcome.text.clone(),
                })
                .await?;
            match outcome.action {
                Some(ToolAction::Input(input)) => {
                    ran.waiting.push(PendingCall {
                        id: call.id,
                        name: call.name,
                        arguments: call.arguments,
                        input: Some(*input),
                    });
                    continue;
                }
                Some(ToolAction::Authorize {
                    integration_id,
                    url,
                }) => {
                    self.emitter
                        .emit(RunEvent::AuthorizationRequired {
                            integration_id,
                            url,
                            tool_call_id: call.id.clone(),
                        })
                        .await?;
                }
                None => {}
            }
            ran.parts.push(Part::ToolResult {
                tool_call_id: call.id,
                name: call.name,
                content: outcome.text,
                is_error: outcome.is_error,
            });
        }
        Ok(ran)
    }

    /// Makes again the MCP tool calls whose servers asked the caller
    /// something, now with the caller's answers; the run goes on with their
    /// results, or pauses again for what the servers ask next.
    pub(super) async fn resume_calls(&mut self, resumed: Vec<Resumed>) -> Result<Step, Stop> {
        if resumed.is_empty() {
            return Ok(Step::Continue);
        }
        for Resumed { call, .. } in &resumed {
            self.emitter
                .emit(RunEvent::ToolCallStarted {
                    call: call.clone(),
                    kind: ToolKind::Mcp,
                })
                .await?;
        }
        let router = &*self.orchestrator.ports.tools;
        let context = &self.tools;
        let results: Vec<(ToolCall, ToolOutcome)> = stream::iter(resumed)
            .map(
                |Resumed {
                     call,
                     input,
                     answers,
                 }| async move {
                    let work = router.resume(context, &call, &input, &answers);
                    let outcome = execute_tool(&call, work).await;
                    (call, outcome)
                },
            )
            .buffered(self.orchestrator.settings.max_parallel_tools.max(1))
            .collect()
            .await;
        let ran = self.finished(results).await?;
        self.store_results(ran).await
    }

    /// Stores the results of the calls this service ran with the run's
    /// state, in one write. Calls waiting for the caller (client tools,
    /// servers' questions) pause the run.
    async fn store_results(&mut self, ran: Ran) -> Result<Step, Stop> {
        let Ran { parts, waiting } = ran;
        let imported = parts.iter().any(|part| {
            matches!(part, Part::ToolResult { name, is_error: false, .. } if name == RETRIEVE_RESOURCE)
        });
        let mut turn = Vec::new();
        if !parts.is_empty() {
            turn.push((Role::Tool, parts));
        }
        let paused = !waiting.is_empty();
        if paused {
            self.run.status = RunStatus::RequiresAction;
            self.run.pending = waiting;
        }
        self.store(turn).await?;
        if imported {
            self.sources = self
                .orchestrator
                .ports
                .tools
                .sources(&self.tools.thread_id)
                .await;
            self.offered = None;
        }
        if !paused {
            return Ok(Step::Continue);
        }
        self.paused().await?;
        Ok(Step::Done)
    }

    /// Tells the client what the paused run waits for, then that it paused.
    async fn paused(&mut self) -> Result<(), Stop> {
        let (asking, client): (Vec<_>, Vec<_>) = self
            .run
            .pending
            .iter()
            .cloned()
            .partition(|call| call.input.is_some());
        if !client.is_empty() {
            self.emitter
                .emit(RunEvent::ClientToolCallsRequired(client))
                .await?;
        }
        for call in asking {
            let requests = call.input.map(|i| i.asked.requests).unwrap_or_default();
            self.emitter
                .emit(RunEvent::ToolInputRequired {
                    id: call.id,
                    name: call.name,
                    requests,
                })
                .await?;
        }
        self.emitter
            .emit(RunEvent::Completed(self.run.clone()))
            .await?;
        Ok(())
    }

    /// Stores `messages` with the run's state in one write, guarded by the
    /// run still being this process's to write (see
    /// [`RepositoryError::RunEnded`]), then sends their events.
    async fn store(&mut self, messages: Vec<(Role, Vec<Part>)>) -> Result<(), Stop> {
        let created_at = now_millis();
        let mut messages: Vec<Message> = messages
            .into_iter()
            .map(|(role, parts)| message(self.run, role, parts, created_at))
            .collect();
        self.run.updated_at = created_at;
        let seqs = self
            .orchestrator
            .ports
            .repo
            .update_run_with(self.run, &messages)
            .await?;
        numbered(&mut messages, seqs);
        self.history.extend(messages.iter().cloned());
        for message in messages {
            self.emitter.emit(RunEvent::MessageCreated(message)).await?;
        }
        Ok(())
    }
}
