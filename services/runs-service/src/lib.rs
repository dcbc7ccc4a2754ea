//! runs-service: agents, threads, messages and runs; `ExecuteRun` gives a model
//! the MCP tools of its agent's integrations and routes its tool calls to
//! mcp-service.
//!
//! `main.rs` parses [`Config`] and calls [`run`]; tests call [`spawn`] to get
//! the same server on an ephemeral port.

// No function past 60 lines (clippy.toml) in the service's code; its unit
// tests are exempt. `make clippy` enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod app;
mod config;
pub mod domain;
#[cfg(test)]
mod fakes;
mod inbound;
pub mod metrics;
pub mod outbound;

pub use app::{SERVICE_NAME, migrate, run, spawn, spawn_wrapped};
pub use config::Config;
