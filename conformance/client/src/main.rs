//! The client the MCP conformance suite tests (`conformance client --command`):
//! mcp-service, started in this process on a fresh SQLite database, driven
//! only through its gRPC API the way an application would drive it.
//!
//! The suite appends the scenario server's URL as the last argument and names
//! the scenario in `MCP_CONFORMANCE_SCENARIO`; `MCP_CONFORMANCE_CONTEXT`
//! carries scenario data (tool calls to make, pre-registered OAuth clients).

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod inputs;
mod oauth;
mod scenarios;
mod switchboard;

use anyhow::Context as _;

/// What the suite tells the client about the scenario.
#[derive(Debug)]
pub struct Scenario {
    /// The scenario name.
    pub name: String,
    /// The scenario server's MCP endpoint.
    pub server_url: String,
    /// Scenario data, a JSON object (or null).
    pub context: serde_json::Value,
}

impl Scenario {
    fn from_env() -> anyhow::Result<Self> {
        let server_url = std::env::args()
            .next_back()
            .filter(|arg| arg.starts_with("http"))
            .context("usage: conformance-client <server-url>")?;
        let name = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(raw) => serde_json::from_str(&raw).context("MCP_CONFORMANCE_CONTEXT is not JSON")?,
            Err(_) => serde_json::Value::Null,
        };
        Ok(Self {
            name,
            server_url,
            context,
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let scenario = Scenario::from_env()?;
    eprintln!(
        "conformance-client: scenario `{}` at {}",
        scenario.name, scenario.server_url
    );
    let policy = scenarios::elicitation_policy(&scenario);
    let workload_token = oauth::workload_token_file(&scenario)?;
    let mut switchboard = switchboard::Switchboard::start(policy, workload_token.clone()).await?;
    if let Some(id_token) = oauth::id_token(&scenario) {
        switchboard.sign_in(id_token)?;
    }
    let result = scenarios::run(&mut switchboard, &scenario).await;
    if let Some(path) = workload_token {
        let _ = std::fs::remove_file(path);
    }
    result
}
