//! Example MCP server for Switchboard.
//!
//! A real MCP server, built on `rmcp`'s server side, that the project's tests
//! use as the upstream MCP server and the local demo bundles. It serves
//! Streamable HTTP ([`spawn_http`]) or stdio ([`serve_stdio`]).
//!
//! Tools: `echo`, `add` (with structured output), `fail` (tool error),
//! `sleep` (observes cancellation), `big`, `mixed` (every content kind),
//! `counter` (per session), `add_tool` (changes the tool list) and `stats`.
//! `tools/list` is paginated [`TOOLS_PAGE_SIZE`] tools at a time. Unlisted,
//! for tests of a failing network: [`DROP_CONNECTION_TOOL`]; listed on request, for
//! tests of exact JSON: [`RECORD_TOOL`]; listed on request, for tests of
//! results too large for a model's context: [`SALES_ROWS_TOOL`]. Unlisted, answering as tasks (the
//! Tasks extension): [`TASK_SLEEP_TOOL`], [`TASK_BIG_TOOL`],
//! [`TASK_FAIL_TOOL`] and [`TASK_CONFIRM_TOOL`]. For tests of pinned tools,
//! [`RunningHttpServer::change_echo_description`] gives `echo` another
//! description ([`CHANGED_ECHO_DESCRIPTION`]), as a server changing a tool
//! its clients use would.
//!
//! Resources: `data://sales.csv`, `docs://readme`, `data://logo.png` and the
//! template `data://sales/{region}.csv`. Prompt: `summarize`.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod api;
mod calls;
mod catalog;
mod confirm;
mod cut;
pub mod data;
mod dpop;
mod http;
mod idp;
mod listen;
mod oauth;
mod rows;
mod server;
mod stats;
mod tasks;
mod tls;
mod tool_list;

use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;

pub use api::{RunningApi, spawn_api, spawn_api_on};
pub use calls::{CALL_LOG_ENV, MAX_BIG_BYTES};
pub use catalog::{EXTRA_TOOL, RECORD_TOOL};
pub use confirm::{CONFIRM_KEY, CONFIRM_TOOL};
pub use http::{HttpServerOptions, MCP_PATH, RunningHttpServer, spawn_http};
pub use idp::{RunningIdentityProvider, spawn_identity_provider};
pub use oauth::{OAuthRealm, TokenRequest};
pub use rows::{MAX_SALES_ROWS, SALES_ROWS_TOOL};
pub use server::{
    DROP_CONNECTION_TOOL, ExampleServer, SERVER_INSTRUCTIONS, SERVER_NAME, TOOLS_PAGE_SIZE,
};
pub use stats::{Stats, StatsSnapshot};
pub use tasks::{
    TASK_BIG_TOOL, TASK_CONFIRM_TOOL, TASK_FAIL_TOOL, TASK_POLL_INTERVAL_MS, TASK_SLEEP_TOOL,
};
pub use tool_list::CHANGED_ECHO_DESCRIPTION;

/// Serves one MCP session on stdin/stdout until stdin reaches end of file or
/// the client closes the session.
pub async fn serve_stdio(stats: Arc<Stats>) -> anyhow::Result<()> {
    let running = ExampleServer::new(stats)
        .serve(rmcp::transport::stdio_pipes())
        .await
        .context("starting the stdio session")?;
    let reason = running
        .waiting()
        .await
        .context("waiting for the stdio session")?;
    tracing::debug!(?reason, "stdio session ended");
    Ok(())
}
