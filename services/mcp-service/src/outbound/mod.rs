//! Adapters: SQL storage, secret sealing, outbound HTTP and the MCP client.

pub mod gateway;
pub mod http_client;
pub mod mcp_client;
pub mod oauth;
pub mod secret_box;
pub mod sessions;
pub mod sql;
pub mod stdio_child;
