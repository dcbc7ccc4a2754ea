//! The step loop: each step streams one model turn, runs the turn's tool
//! calls, and stores the turn; the run ends when the model answers without
//! tool calls, pauses for client tools, or reaches its step limit.

use std::{collections::BTreeSet, sync::Arc};

use switchboard_db::now_millis;

mod model_turn;
mod recover;
mod telemetry;
mod tools;

use super::{
    context::{RunContext, message, numbered, save},
    discovery::{Discovered, Discovery, system_prompt},
    emitter::{Emitter, Stop},
    models::Models,
    pins::check_pins,
};
use crate::domain::{
    datasource::DataSource,
    entities::{Agent, Message, Part, PendingCall, Role, Run, RunStatus, Thread},
    events::{RunEvent, ToolKind},
    history::HistoryLimits,
    ids::IntegrationId,
    model::ToolCall,
    ports::{Caller, RunsRepository},
    tools::{ToolContext, ToolRouter, Toolset},
};

/// The limits of a run's steps.
#[derive(Debug, Clone, Copy)]
pub(super) struct StepSettings {
    /// Model calls per run when the agent sets none.
    pub(super) default_max_steps: u32,
    /// Tool calls of one turn run at once.
    pub(super) max_parallel_tools: usize,
    /// Output-token limit sent with every model request.
    pub(super) max_output_tokens: u32,
    /// How much of the thread a model request carries.
    pub(super) history: HistoryLimits,
}

/// The step loop of every run: storage, the router of tool calls, the
/// discovery of integrations, and the limits of steps.
#[derive(Clone)]
pub(super) struct StepLoop {
    pub(super) repo: Arc<dyn RunsRepository>,
    pub(super) tools: Arc<ToolRouter>,
    pub(super) discovery: Discovery,
    pub(super) settings: StepSettings,
}

/// Whether a run goes on after a step.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Another model turn follows.
    Continue,
    /// The run ended (answered, paused or out of steps), its end stored and
    /// sent.
    Done,
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
    steps: &'a StepLoop,
    run: &'a mut Run,
    emitter: &'a mut Emitter,
    agent: &'a Agent,
    models: &'a Models,
    /// Which of the models answered last: the run's steps start there.
    answering: usize,
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
    /// The MCP tools withheld because their server changed them.
    withheld: BTreeSet<String>,
}

impl StepLoop {
    /// The run's body.
    pub(super) async fn execute(
        &self,
        mut context: RunContext,
        run: &mut Run,
        emitter: &mut Emitter,
    ) -> Result<(), Stop> {
        let recovery = match context.takeover {
            Some(takeover) => {
                let plan = self.recovery(run, &context.agent, takeover).await?;
                emitter
                    .emit(RunEvent::Continued {
                        run: run.clone(),
                        continuation: plan.continuation.clone(),
                    })
                    .await?;
                Some(plan)
            }
            None => {
                emitter.emit(RunEvent::Started(run.clone())).await?;
                None
            }
        };
        if let Some(passed) = context.budget {
            emitter.emit(RunEvent::SoftBudgetPassed(passed)).await?;
        }
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
            models,
            ..
        } = &context;
        let mut running = self
            .prepare(caller, thread, agent, models, run, emitter)
            .await?;
        if let Some(plan) = recovery
            && running.recover(plan).await? == Step::Done
        {
            return Ok(());
        }
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
        models: &'a Models,
        run: &'a mut Run,
        emitter: &'a mut Emitter,
    ) -> Result<Running<'a>, Stop> {
        let (history, discovered, sources) = tokio::join!(
            self.repo.recent_messages(thread.id, self.settings.history),
            self.discovery.discover(caller, agent),
            self.tools.sources(thread.id),
        );
        let history = history?;
        let Discovered {
            capabilities,
            failed,
            authorize,
        } = discovered;
        report_discovery(emitter, &failed, authorize).await?;
        // What the model would be offered, against the thread's pins; the
        // first step offers it without what the pins withhold.
        let offered = self.tools.toolset(agent, &sources, &capabilities);
        let drift = check_pins(&*self.repo, thread.id, agent.config.tool_drift, &offered).await?;
        for change in drift.changes {
            emitter
                .emit(RunEvent::ToolDefinitionChanged(change))
                .await?;
        }
        let offered = offered.withholding(&drift.withheld);
        // Saved with the run's next state change.
        run.bindings.clone_from(&offered.bindings);
        let system = system_prompt(agent, &capabilities, &failed);
        let max_steps = match agent.config.max_steps {
            0 => self.settings.default_max_steps,
            n => n,
        };
        Ok(Running {
            steps: self,
            run,
            emitter,
            agent,
            models,
            answering: 0,
            history,
            tools: ToolContext {
                caller: caller.clone(),
                thread_id: thread.id,
                capabilities: Arc::new(capabilities),
            },
            system,
            max_steps,
            sources,
            offered: Some(Arc::new(offered)),
            withheld: drift.withheld,
        })
    }
}

/// Tells the client which integrations were skipped, and which the user
/// must connect.
async fn report_discovery(
    emitter: &mut Emitter,
    failed: &[(IntegrationId, String)],
    authorize: Vec<(IntegrationId, String)>,
) -> Result<(), Stop> {
    for &(integration_id, ref error) in failed {
        emitter
            .emit(RunEvent::DiscoveryFailed {
                integration_id,
                error: error.clone(),
            })
            .await?;
    }
    for (integration_id, url) in authorize {
        emitter
            .emit(RunEvent::AuthorizationRequired {
                integration_id,
                url,
                tool_call_id: String::new(),
            })
            .await?;
    }
    Ok(())
}

impl Running<'_> {
    /// One model turn and what follows from it.
    async fn step(&mut self) -> Result<Step, Stop> {
        if self.run.steps >= i64::from(self.max_steps) {
            self.run.status = RunStatus::MaxSteps;
            save(&*self.steps.repo, self.run).await?;
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
            return self.record_answer(turn).await;
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
            approval: None,
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
        let toolset = Arc::new(
            self.steps
                .tools
                .toolset(self.agent, &self.sources, &self.tools.capabilities)
                .withholding(&self.withheld),
        );
        // Saved with the run's next state change.
        self.run.bindings.clone_from(&toolset.bindings);
        self.offered = Some(Arc::clone(&toolset));
        toolset
    }

    /// The model answered without tool calls: the answer and the run's end
    /// are saved together.
    async fn record_answer(&mut self, turn: Turn) -> Result<Step, Stop> {
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
        let seqs = self.steps.repo.update_run_with(self.run, &messages).await?;
        numbered(&mut messages, seqs);
        self.history.extend(messages.iter().cloned());
        for message in messages {
            self.emitter.emit(RunEvent::MessageCreated(message)).await?;
        }
        Ok(())
    }
}
