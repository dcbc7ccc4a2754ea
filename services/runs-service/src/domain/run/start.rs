//! Starting a run: the checks, the run's first records, and the task that
//! drives it. A run starts from a user message, or resumes a paused run
//! (`resume.rs`).

use std::sync::Arc;

use switchboard_db::now_millis;
use tokio::sync::mpsc;

use super::{
    context::{Opened, Resumption, RunContext, invoke_agent_span, load, message, numbered},
    drive::{Launch, RunTask},
    emitter::EmitterStart,
    lease::ActiveRuns,
    run_limits::RunCounts,
};
use crate::domain::{
    entities::{Agent, Message, Part, Role, Run, Thread},
    error::RunsError,
    events::Envelope,
    ids::{RunId, ThreadId},
    input::{InputLimits, RunInput},
    ports::{Caller, Keeping, ModelProviders, RunsRepository},
    tools::ToolRouter,
    usage::{Budgets, SoftBudgetPassed},
};

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
    /// Decides the approvals a resuming caller decides.
    pub(super) tools: Arc<ToolRouter>,
    /// Where the callers of runs that continue elsewhere are kept; `None`
    /// without caller keys.
    pub(super) keeping: Option<Keeping>,
}

impl RunStarter {
    /// Refuses a new run of an organization that used its monthly token
    /// budget (RESOURCE_EXHAUSTED, naming the budget); past its soft
    /// budget the run starts, and the warning is returned (and counted). A
    /// paused run resumes whatever the budgets say: it started within them.
    async fn within_budget(&self, caller: &Caller) -> Result<Option<SoftBudgetPassed>, RunsError> {
        let org = &caller.principal.org_id;
        let hard = self.budgets.monthly_tokens(org);
        let soft = self.budgets.soft_monthly_tokens(org);
        if hard.is_none() && soft.is_none() {
            return Ok(None);
        }
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
        if let Some(budget) = hard
            && used >= budget
        {
            return Err(RunsError::QuotaExceeded(format!(
                "the organization used {used} of the {budget} tokens of its monthly token \
                 budget; new runs start again next month, or when an operator raises the budget"
            )));
        }
        let passed = soft
            .filter(|&soft| used >= soft)
            .map(|soft_budget_tokens| SoftBudgetPassed {
                used_tokens: used,
                soft_budget_tokens,
            });
        if let Some(passed) = passed {
            tracing::warn!(
                org_id = %org,
                used_tokens = passed.used_tokens,
                soft_budget_tokens = passed.soft_budget_tokens,
                "a run starts past its organization's soft monthly token budget"
            );
            crate::metrics::soft_budget_passed(org, self.budgets.names(org));
        }
        Ok(passed)
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
        // task to its end, so a refused run leaves nothing behind; then the
        // runs of every replica are counted.
        let place = self.counts.reserve(&caller)?;
        self.counts.check_all_replicas(&*self.repo, &caller).await?;
        let (thread, agent, models) = load(&*self.repo, &*self.models, &caller, thread_id).await?;
        let resuming = !matches!(input, RunInput::UserMessage(_));
        let Opened {
            run,
            input,
            resumed,
            budget,
        } = self.open(&caller, &thread, &agent, input).await?;
        // A resumed run's events continue its stream's numbering; a new
        // run has none yet.
        let after = if resuming {
            self.last_event(run.id).await
        } else {
            0
        };
        let (tx, rx) = mpsc::channel(64);
        let context = RunContext {
            caller,
            thread,
            agent,
            models,
            input,
            resumed,
            budget,
            takeover: None,
        };
        if context.agent.config.recovery.continues() {
            self.keep_caller(run.id, &context.caller).await;
        }
        let task = self.task.clone();
        let launch = Launch {
            events: tx,
            halt: self.active.add(run.id),
            place,
            start: EmitterStart {
                after,
                stored: u64::try_from(after).unwrap_or(0),
                max_stored: self.max_stored_events,
                detached,
            },
        };
        let span = invoke_agent_span(&context, run.id);
        tokio::spawn(tracing::Instrument::instrument(
            async move { task.drive(context, run, launch).await },
            span,
        ));
        Ok(rx)
    }

    /// Keeps the caller of `run_id`, whose agent continues runs on another
    /// replica, while it runs. Without caller keys, or when it cannot be
    /// kept, the run still starts: it ends interrupted if its replica
    /// stops, as every run did before.
    async fn keep_caller(&self, run_id: RunId, caller: &Caller) {
        let Some(keeping) = &self.keeping else {
            tracing::debug!(run_id = %run_id, "no caller keys: the run cannot continue on another replica");
            return;
        };
        let Some(sealed) = keeping.keeper.seal(run_id, caller) else {
            return;
        };
        if let Err(error) = keeping.store.keep_caller(run_id, &sealed).await {
            tracing::warn!(run_id = %run_id, error = %error, "failed to keep a run's caller; the run cannot continue on another replica");
        }
    }

    /// The sequence of `run_id`'s last stored event; 0 when it cannot be
    /// read, so its stream starts over.
    async fn last_event(&self, run_id: RunId) -> i64 {
        self.repo
            .last_run_event(run_id)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(run_id = %run_id, error = %error, "failed to read a run's last event");
                0
            })
    }

    /// The run `input` starts: a new one with the user's message, or the
    /// paused one it resumes.
    async fn open(
        &self,
        caller: &Caller,
        thread: &Thread,
        agent: &Agent,
        input: RunInput,
    ) -> Result<Opened, RunsError> {
        match input {
            RunInput::UserMessage(text) => {
                let budget = self.within_budget(caller).await?;
                let (run, input) = self.begin(thread, agent, text).await?;
                Ok(Opened {
                    run,
                    input,
                    resumed: Vec::new(),
                    budget,
                })
            }
            RunInput::ClientToolResults {
                run_id,
                results,
                answers,
                approvals,
            } => {
                let sent = Resumption {
                    run_id,
                    results,
                    answers,
                    approvals,
                };
                let (run, input, resumed) = self.resume(caller, thread, sent).await?;
                Ok(Opened {
                    run,
                    input,
                    resumed,
                    budget: None,
                })
            }
        }
    }

    /// A new run with the user's message, stored together.
    async fn begin(
        &self,
        thread: &Thread,
        agent: &Agent,
        text: String,
    ) -> Result<(Run, Vec<Message>), RunsError> {
        let now = now_millis();
        let run = Run::started(thread.id, agent.id, now);
        let mut input = vec![message(&run, Role::User, vec![Part::Text { text }], now)];
        let seqs = self.repo.start_run_with(&run, &input).await?;
        numbered(&mut input, seqs);
        Ok((run, input))
    }
}
