//! `ExecuteRun`, `WatchRun` and `CancelRun`: the loop that lets a model use
//! the MCP tools of its agent, and the management of runs in flight.
//!
//! One type per job, each holding only the ports it uses:
//!
//! | job | type | file | uses |
//! |---|---|---|---|
//! | start a run, or resume a paused one | `RunStarter` | [`start`] | storage, model providers, the limits of input and of runs in flight |
//! | a run's task from start to end, and what it records when stopped early | `RunTask` | [`drive`] | storage, the runs in flight |
//! | the step loop: model turns and their tool calls | `StepLoop` | [`steps`] | storage, the tool router, discovery |
//! | what the agent's integrations offer, once per run | `Discovery` | [`discovery`] | mcp-service |
//! | the thread's pinned tools against what is listed now | `check_pins` | [`pins`] | storage |
//! | follow a run's events (`WatchRun`) | `RunWatcher` | [`watch`], [`feed`] | storage |
//! | cancel a run (`CancelRun`) | `RunCanceller` | [`manage`] | storage, the runs in flight |
//!
//! What they share sits below them: a started run's context in
//! [`context`], how events are sent in [`emitter`]; the vocabulary that
//! storage and the client's adapters share with them (events, inputs,
//! history limits) is in the domain itself.
//!
//! [`Orchestrator`] is a thin façade over the jobs for wiring: the gRPC
//! adapter holds one value and calls `start`, `watch` and `cancel` on it, so
//! the adapter does not change when a job's ports do, and `app.rs` builds
//! the jobs from one set of ports and settings.
//!
//! A run discovers the agent's integrations once and concurrently, offers
//! the model their tools, runs the model's tool calls concurrently with
//! results in call order, and loops until the model answers without tool
//! calls, a client-side tool is called (the run pauses) or the step limit
//! is reached. Every message is stored before its event is sent; whatever a
//! tool does becomes text for the model, never a failed run.

mod context;
mod discovery;
mod drive;
mod emitter;
mod event_log;
mod feed;
mod history;
mod lease;
mod manage;
mod models;
mod pins;
mod resume;
mod run_limits;
mod start;
mod steps;
mod takeover;
mod watch;

use std::{sync::Arc, time::Duration};

use tokio::sync::mpsc;

pub use feed::WatchSettings;
pub use lease::{ActiveRuns, Halt, LeaseSettings, TakeOver, keep_leases};
pub use run_limits::RunLimits;
pub use takeover::RunTakeover;

use super::{
    entities::Run,
    error::RunsError,
    events::Envelope,
    history::HistoryLimits,
    ids::ThreadId,
    input::{InputLimits, RunInput},
    ports::{Caller, Keeping, McpPort, ModelProviders, RunsRepository},
    tools::ToolRouter,
    usage::Budgets,
};

/// Limits of runs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Model calls per run when the agent sets none.
    pub default_max_steps: u32,
    /// Time each integration's discovery may take.
    pub discovery_timeout: Duration,
    /// Tool calls of one turn run at once.
    pub max_parallel_tools: usize,
    /// Output-token limit sent with every model request.
    pub max_output_tokens: u32,
    /// How much of the thread a model request carries.
    pub history: HistoryLimits,
    /// How large a run's input may be.
    pub input: InputLimits,
    /// Events stored per run at most (for `WatchRun`); the run's last event
    /// always is.
    pub max_stored_events: u64,
    /// Events waiting to be stored at most (see [`event_log`]).
    pub event_queue: usize,
    /// How `WatchRun` follows a run.
    pub watch: WatchSettings,
    /// Runs in flight per organization and per user.
    pub limits: RunLimits,
    /// Each organization's monthly token budget.
    pub budgets: Budgets,
}

/// The ports a run uses.
#[derive(Clone)]
pub struct RunPorts {
    /// Storage.
    pub repo: Arc<dyn RunsRepository>,
    /// mcp-service, for discovery.
    pub mcp: Arc<dyn McpPort>,
    /// The model providers.
    pub models: Arc<dyn ModelProviders>,
    /// Every tool call.
    pub tools: Arc<ToolRouter>,
    /// Where the callers of runs that continue on another replica are
    /// kept; `None` without caller keys (every run ends interrupted when
    /// its replica stops).
    pub keeping: Option<Keeping>,
}

impl std::fmt::Debug for RunPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunPorts").finish_non_exhaustive()
    }
}

/// Runs agents: the façade over the jobs of runs (see the module's
/// documentation).
#[derive(Clone)]
pub struct Orchestrator {
    starter: start::RunStarter,
    watcher: watch::RunWatcher,
    canceller: manage::RunCanceller,
    takeover: Option<Arc<RunTakeover>>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator").finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// The jobs of runs over one set of ports and settings.
    pub fn new(ports: RunPorts, settings: RunSettings, active: ActiveRuns) -> Self {
        let RunPorts {
            repo,
            mcp,
            models,
            tools,
            keeping,
        } = ports;
        let steps = steps::StepLoop {
            repo: Arc::clone(&repo),
            tools: Arc::clone(&tools),
            discovery: discovery::Discovery {
                mcp,
                timeout: settings.discovery_timeout,
            },
            settings: steps::StepSettings {
                default_max_steps: settings.default_max_steps,
                max_parallel_tools: settings.max_parallel_tools,
                max_output_tokens: settings.max_output_tokens,
                history: settings.history,
            },
        };
        let task = drive::RunTask {
            repo: Arc::clone(&repo),
            events: event_log::EventLog::spawn(Arc::clone(&repo), settings.event_queue),
            active: active.clone(),
            steps,
        };
        let counts = run_limits::RunCounts::new(settings.limits);
        let takeover = keeping.clone().map(|keeping| {
            Arc::new(RunTakeover {
                repo: Arc::clone(&repo),
                keeping,
                models: Arc::clone(&models),
                counts: counts.clone(),
                active: active.clone(),
                task: task.clone(),
                max_stored_events: settings.max_stored_events,
            })
        });
        Self {
            starter: start::RunStarter {
                repo: Arc::clone(&repo),
                models,
                input: settings.input,
                max_stored_events: settings.max_stored_events,
                counts,
                budgets: settings.budgets,
                active: active.clone(),
                task,
                tools,
                keeping,
            },
            watcher: watch::RunWatcher {
                repo: Arc::clone(&repo),
                feeds: feed::Feeds::default(),
                settings: settings.watch,
            },
            canceller: manage::RunCanceller { repo, active },
            takeover,
        }
    }

    /// The job that takes over runs whose replica stopped, while this
    /// orchestrator lives; `None` without caller keys.
    pub fn takeover(&self) -> Option<std::sync::Weak<dyn TakeOver>> {
        self.takeover.as_ref().map(|takeover| {
            let takeover: Arc<dyn TakeOver> = takeover.clone();
            Arc::downgrade(&takeover)
        })
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
        self.starter.start(caller, thread_id, input, detached).await
    }

    /// The events of `run` (which the caller may see) with `sequence >=
    /// from`, then the new ones until its last event.
    pub fn watch(&self, run: &Run, from: i64) -> mpsc::Receiver<Result<Envelope, RunsError>> {
        self.watcher.watch(run, from)
    }

    /// Asks for the end of `run` (which the caller may see); see
    /// `RunCanceller::cancel`. Returns the run as stored after.
    pub async fn cancel(&self, run: &Run) -> Result<Run, RunsError> {
        self.canceller.cancel(run).await
    }
}

#[cfg(test)]
mod approval_tests;
#[cfg(test)]
mod manage_tests;
#[cfg(test)]
mod tests;
