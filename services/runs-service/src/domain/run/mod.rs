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

mod discovery;
mod events;
mod history;
mod start;
mod steps;

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Duration,
};

pub use events::{Envelope, RunEvent, ToolCallStatus, ToolKind};
pub use history::{HistoryLimits, WindowMeter, keep_window, to_chat};
pub use start::{ClientResult, RunInput};

use super::{
    entities::RunStatus,
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
        if let Ok(mut set) = self.0.lock()
            && set.insert(id.to_owned())
        {
            crate::metrics::run_started();
        }
    }

    fn remove(&self, id: &str, status: RunStatus) {
        if let Ok(mut set) = self.0.lock()
            && set.remove(id)
        {
            crate::metrics::run_finished(status.as_str());
        }
    }
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
            ports,
            settings,
            active,
        }
    }
}

#[cfg(test)]
mod tests;
