//! One run, one trace: both services, the example MCP server and a scripted
//! model export to an OTLP collector inside the test; the client's trace
//! reaches the MCP server, nothing secret reaches telemetry, and the
//! Prometheus endpoint serves the metrics of the run; audit events arrive as
//! log records. A service process that exports nothing still carries the
//! caller's trace.
//!
//! A binary of its own: it installs the process's telemetry (a global
//! subscriber and OpenTelemetry providers), which other tests must not share.

mod audit_logs;
mod process;
mod run;
mod services;
mod untraced;
#[allow(dead_code)]
#[path = "../e2e/world.rs"]
mod world;
