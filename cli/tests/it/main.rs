//! The `switchboard` binary against both services on loopback, the example
//! MCP server and a scripted model, as a user runs it: from a script and in a
//! real terminal (tmux).

mod approvals;
mod asking;
mod audit;
mod chat;
mod client_credentials;
mod errors;
mod grpc;
mod guardrails;
mod json;
mod openapi;
mod policies;
mod terminal;
mod tls;
mod toolsets;
mod world;
