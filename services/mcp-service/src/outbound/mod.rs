//! Adapters: SQL storage, secret sealing, outbound HTTP and MCP clients.

pub mod http_client;
pub mod mcp_client;
pub mod oauth;
pub mod secret_box;
pub mod sql;
