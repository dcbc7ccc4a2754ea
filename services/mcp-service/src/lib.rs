//! mcp-service: the MCP integrations of each organization, and the calls that
//! reach their servers (`Discover`, `ExecuteTool`, `RetrieveResource`,
//! `GetPrompt`).
//!
//! `main.rs` parses [`Config`] and calls [`run`]; tests call [`spawn`] to get
//! the same server on an ephemeral port.

mod app;
mod config;
pub mod domain;
mod inbound;
pub mod outbound;

pub use app::{SERVICE_NAME, run, spawn};
pub use config::Config;
