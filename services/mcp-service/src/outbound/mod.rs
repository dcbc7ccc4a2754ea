//! Adapters: SQL storage, secret sealing, outbound HTTP and the MCP client.

pub mod capped_http;
pub mod discovery;
pub mod elicitation;
pub mod gateway;
pub mod http_client;
pub mod listen;
pub mod mcp_client;
pub mod metric_labels;
pub mod mrtr;
pub mod oauth;
pub mod oauth_code;
pub mod oauth_http;
pub mod oauth_store;
pub mod secret_box;
pub mod session_pool;
pub mod sessions;
pub mod sql;
pub mod sse_answer;
pub mod stdio_child;
pub mod stdio_lines;
pub mod tasks;
pub mod telemetry;
pub mod upstream_trace;
