//! Domain types, use cases and the ports runs-service's adapters implement.
//!
//! - [`run`]: `ExecuteRun`, the loop that lets a model use tools.
//! - [`tools`]: the tools a run offers and the one router of tool calls.
//! - [`texts`]: every text the model reads.
//! - [`service`]: agents, threads, messages and runs as resources.
//! - [`datasource`]: data sources and the SQL over them.
//! - [`oversized`]: tool results too large for the context, as tables or
//!   cut.
//! - [`pins`]: the tools each thread pinned, and how a change is seen.
//! - [`problems`]: what a check finds wrong with a tool call or result.
//! - [`recovery`]: what a run does when its replica stops.
//! - [`ports`]: storage, mcp-service and model providers, as the domain
//!   needs them.

pub mod datasource;
pub mod entities;
pub mod error;
pub mod events;
pub mod history;
pub mod ids;
pub mod input;
pub mod model;
pub mod oversized;
pub mod pins;
pub mod ports;
pub mod problems;
pub mod recovery;
pub mod run;
pub mod service;
pub mod texts;
pub mod tools;
pub mod usage;
