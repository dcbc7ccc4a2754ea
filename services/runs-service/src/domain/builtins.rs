//! Tools built into runs-service, offered next to the agent's MCP tools.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{
    entities::Agent,
    model::ToolSpec,
    ports::{Caller, Capabilities},
    texts,
};

/// What a built-in tool call may use.
#[derive(Debug, Clone)]
pub struct BuiltinContext {
    /// The caller the run acts for.
    pub caller: Caller,
    /// The run's thread.
    pub thread_id: String,
    /// What the agent's integrations offer.
    pub capabilities: Arc<Vec<Capabilities>>,
}

/// The built-in tools.
#[derive(Debug, Default)]
pub struct Builtins {}

impl Builtins {
    /// No built-in tools.
    pub fn none() -> Self {
        Self {}
    }

    /// The built-in tools offered to `agent`'s runs.
    pub fn specs(&self, _agent: &Agent, _capabilities: &[Capabilities]) -> Vec<ToolSpec> {
        Vec::new()
    }

    /// A system prompt section about the built-in tools, if any.
    pub fn prompt_section(&self, _agent: &Agent, _capabilities: &[Capabilities]) -> Option<String> {
        None
    }

    /// Runs built-in tool `name`; returns the text for the model and whether
    /// it is an error.
    pub async fn execute(
        &self,
        _context: &BuiltinContext,
        name: &str,
        _arguments: Map<String, Value>,
    ) -> (String, bool) {
        (texts::tool_not_found(name), true)
    }
}
