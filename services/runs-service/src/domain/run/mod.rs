//! `ExecuteRun`: the loop that lets a model use the MCP tools of its agent.
//!
//! A run discovers the agent's integrations once and concurrently
//! ([`discovery`]), offers the model their tools, runs the model's tool calls
//! concurrently with results in call order ([`steps`]), and loops until the
//! model answers without tool calls, a client-side tool is called (the run
//! pauses) or the step limit is reached. Starting and resuming are in
//! [`start`], what the client is told in [`events`], what a model request
//! carries of the thread in [`history`]. Every message is stored before its
//! event is sent; whatever a tool does becomes text for the model, never a
//! failed run.

mod context;
mod discovery;
mod drive;
mod emitter;
mod feed;
mod history;
mod lease;
mod manage;
mod run_limits;
mod start;
mod steps;
mod watch;

use std::{sync::Arc, time::Duration};

pub use feed::WatchSettings;
pub use history::{keep_window, to_chat};
pub use lease::{ActiveRuns, Halt, LeaseSettings, keep_leases};
pub use run_limits::RunLimits;

use super::{
    history::HistoryLimits,
    input::InputLimits,
    ports::{McpPort, ModelProviders, RunsRepository},
    tools::ToolRouter,
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
    /// How `WatchRun` follows a run.
    pub watch: WatchSettings,
    /// Runs in flight per organization and per user.
    pub limits: RunLimits,
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
}

impl std::fmt::Debug for RunPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunPorts").finish_non_exhaustive()
    }
}

/// Runs agents.
#[derive(Clone)]
pub struct Orchestrator {
    ports: RunPorts,
    settings: RunSettings,
    active: ActiveRuns,
    counts: run_limits::RunCounts,
    feeds: feed::Feeds,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// An orchestrator over its ports.
    pub fn new(ports: RunPorts, settings: RunSettings, active: ActiveRuns) -> Self {
        Self {
            counts: run_limits::RunCounts::new(settings.limits),
            feeds: feed::Feeds::default(),
            ports,
            settings,
            active,
        }
    }
}

#[cfg(test)]
mod manage_tests;
#[cfg(test)]
mod tests;
