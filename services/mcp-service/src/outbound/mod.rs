//! Adapters, one room per family: the MCP client with its sessions and
//! transports, OAuth, the outbound HTTP client, storage and telemetry.

pub mod http;
pub mod mcp;
pub mod oauth;
pub mod storage;
pub mod telemetry;
