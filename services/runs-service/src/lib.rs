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
/// In-memory versions of the ports: the run loop's unit tests use them, and
/// `tests/it` holds the fake repository to the repository suite the SQL one
/// passes (feature `fakes`, which only the tests turn on).
#[cfg(any(test, feature = "fakes"))]
pub mod fakes;
mod inbound;
pub mod metrics;
pub mod outbound;

pub use app::{SERVICE_NAME, migrate, run, spawn, spawn_wrapped};
pub use config::Config;
pub use outbound::mcp::replica_order;
