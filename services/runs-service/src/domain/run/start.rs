//! Starting a run: the checks, the run's first records, and the task that
//! drives it. A run starts from a user message, or resumes a paused run with
//! the results of its client tool calls.

use std::{collections::HashSet, sync::Arc};

use switchboard_db::now_millis;
use tokio::sync::mpsc;

use super::{
    context::{Resumed, RunContext, message, numbered},
    drive::{Launch, RunTask},
    emitter::EmitterStart,
    lease::ActiveRuns,
    run_limits::RunCounts,
};
use crate::domain::{
    entities::{
        Agent, InputAnswers, Message, Part, PendingCall, Role, Run, RunStatus, Thread, Usage,
    },
    error::RunsError,
    events::Envelope,
    ids::{RunId, ThreadId},
    input::{ClientResult, InputLimits, RunInput, ToolAnswers},
    model::ToolCall,
    ports::{Caller, ModelProvider, ModelProviders, RunsRepository},
    usage::Budgets,
};

const NOT_PAUSED: &str = "the run is not waiting for client tool results or answers";

/// Starts and resumes runs: storage, the model providers, the limits of a
/// run's input and of the runs in flight, and the task each run is driven
/// by.
#[derive(Clone)]
pub(super) struct RunStarter {
    pub(super) repo: Arc<dyn RunsRepository>,
    pub(super) models: Arc<dyn ModelProviders>,
    pub(super) input: InputLimits,
    /// Events stored per run at most.
    pub(super) max_stored_events: u64,
    pub(super) counts: RunCounts,
    /// Each organization's monthly token budget.
    pub(super) budgets: Budgets,
    pub(super) active: ActiveRuns,
    pub(super) task: RunTask,
}

impl RunStarter {
    /// Refuses a new run of an organization that used its monthly token
    /// budget (RESOURCE_EXHAUSTED, naming the budget). A paused run
    /// resumes whatever the budget says: it started within it.
    async fn within_budget(&self, caller: &Caller) -> Result<(), RunsError> {
        let org = &caller.principal.org_id;
        let Some(budget) = self.budgets.monthly_tokens(org) else {
            return Ok(());
        };
        let today = chrono::Utc::now().date_naive();
        let used: u64 = self
            .repo
            .usage(&Budgets::month_to_date(org, today))
            .await?
            .iter()
            .map(|row| {
                u64::try_from(row.input_tokens.saturating_add(row.output_tokens)).unwrap_or(0)
            })
            .sum();
        if used >= budget {
            return Err(RunsError::QuotaExceeded(format!(
                "the organization used {used} of the {budget} tokens of its monthly token \
                 budget; new runs start again next month, or when an operator raises the budget"
            )));
        }
        Ok(())
    }

    /// Checks the request, records the run, and starts it on a task. The
    /// returned stream carries its events; dropping it cancels the run
    /// unless it is `detached`.
    pub async fn start(
        &self,
        caller: Caller,
        thread_id: ThreadId,
        input: RunInput,
        detached: bool,
    ) -> Result<mpsc::Receiver<Envelope>, RunsError> {
        // Checked first: input past a limit is refused before anything is
        // read or stored.
        self.input.check(&input)?;
        // A place is taken before anything is stored, and held by the run's
        // task to its end, so a refused run leaves nothing behind.
        let place = self.counts.reserve(&caller)?;
        let (thread, agent, provider) = self.load(&caller, thread_id).await?;
        let (run, input, resumed) = match input {
            RunInput::UserMessage(text) => {
                self.within_budget(&caller).await?;
                let (run, input) = self.begin(&thread, &agent, text).await?;
                (run, input, Vec::new())
            }
            RunInput::ClientToolResults {
                run_id,
                results,
                answers,
            } => self.resume(&thread, run_id, &results, answers).await?,
        };
        // A resumed run's events continue its stream's numbering.
        let after = match self.repo.last_run_event(run.id).await {
            Ok(after) => after,
            Err(error) => {
                tracing::warn!(run_id = %run.id, error = %error, "failed to read a run's last event");
                0
            }
        };
        let (tx, rx) = mpsc::channel(64);
        let context = RunContext {
            caller,
            thread,
            agent,
            provider,
            input,
            resumed,
        };
        let task = self.task.clone();
        let launch = Launch {
            events: tx,
            halt: self.active.add(run.id),
            place,
            start: EmitterStart {
                after,
                max_stored: self.max_stored_events,
                detached,
            },
        };
        // The run's work follows its span (OpenTelemetry GenAI conventions),
        // itself a child of the caller's ExecuteRun span: the calls it makes
        // to mcp-service and to the model carry the caller's trace.
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = %format!("invoke_agent {}", context.agent.name),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.id = %context.agent.id,
            gen_ai.agent.name = %context.agent.name,
            gen_ai.conversation.id = %context.thread.id,
            run_id = %run.id,
        );
        tokio::spawn(tracing::Instrument::instrument(
            async move { task.drive(context, run, launch).await },
            span,
        ));
        Ok(rx)
    }

    /// The caller's thread, its agent and the agent's model provider.
    async fn load(
        &self,
        caller: &Caller,
        thread_id: ThreadId,
    ) -> Result<(Thread, Agent, Arc<dyn ModelProvider>), RunsError> {
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
        Ok((thread, agent, provider))
    }

    /// A new run with the user's message, stored together.
    async fn begin(
        &self,
        thread: &Thread,
        agent: &Agent,
        text: String,
    ) -> Result<(Run, Vec<Message>), RunsError> {
        let now = now_millis();
        let run = Run {
            id: RunId::new(),
            thread_id: thread.id,
            agent_id: agent.id,
            status: RunStatus::Running,
            steps: 0,
            usage: Usage::default(),
            error: None,
            bindings: Vec::new(),
            pending: Vec::new(),
            created_at: now,
            updated_at: now,
        };
        let mut input = vec![message(&run, Role::User, vec![Part::Text { text }], now)];
        let seqs = self.repo.start_run_with(&run, &input).await?;
        numbered(&mut input, seqs);
        Ok((run, input))
    }

    /// A paused run back to running, with the client's results stored;
    /// the calls that waited for answers are returned with theirs, to be
    /// made again by the run.
    async fn resume(
        &self,
        thread: &Thread,
        run_id: RunId,
        results: &[ClientResult],
        answers: Vec<ToolAnswers>,
    ) -> Result<(Run, Vec<Message>, Vec<Resumed>), RunsError> {
        let mut run = self
            .repo
            .get_run(thread.id, run_id)
            .await?
            .ok_or(RunsError::NotFound("run"))?;
        if run.status != RunStatus::RequiresAction {
            return Err(RunsError::FailedPrecondition(NOT_PAUSED.into()));
        }
        let resumed = resumed_calls(&run.pending, results, answers)?;
        let now = now_millis();
        run.status = RunStatus::Running;
        run.updated_at = now;
        let parts = answered(&run, results);
        run.pending.clear();
        let mut input = Vec::new();
        if !parts.is_empty() {
            input.push(message(&run, Role::Tool, parts, now));
        }
        // The move back to running and the results are one write: a crash
        // between them would leave calls without results.
        let seqs = self
            .repo
            .resume_run_with(&run, &input)
            .await?
            .ok_or_else(|| RunsError::FailedPrecondition(NOT_PAUSED.into()))?;
        numbered(&mut input, seqs);
        Ok((run, input, resumed))
    }
}

/// Matches what the caller sent to what the run waits for: every client
/// call needs a result, every call whose server asked needs answers.
fn resumed_calls(
    pending: &[PendingCall],
    results: &[ClientResult],
    mut answers: Vec<ToolAnswers>,
) -> Result<Vec<Resumed>, RunsError> {
    let given: HashSet<&str> = results.iter().map(|r| r.tool_call_id.as_str()).collect();
    let mut missing = Vec::new();
    let mut resumed = Vec::new();
    for call in pending {
        match &call.input {
            None if !given.contains(call.id.as_str()) => missing.push(call.id.clone()),
            None => {}
            Some(input) => match answers.iter().position(|a| a.tool_call_id == call.id) {
                None => missing.push(call.id.clone()),
                Some(at) => resumed.push(Resumed {
                    call: ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    },
                    input: input.clone(),
                    answers: InputAnswers {
                        responses: answers.swap_remove(at).responses,
                        request_state: input.asked.request_state.clone(),
                        task_id: input.asked.task_id.clone(),
                    },
                }),
            },
        }
    }
    if missing.is_empty() {
        Ok(resumed)
    } else {
        Err(RunsError::invalid(
            "client_tool_results",
            format!(
                "results or answers are missing for tool calls {}",
                missing.join(", ")
            ),
        ))
    }
}

/// The client's results as tool results, in the order the model called.
fn answered(run: &Run, results: &[ClientResult]) -> Vec<Part> {
    run.pending
        .iter()
        .filter(|pending| pending.input.is_none())
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
        .collect()
}
