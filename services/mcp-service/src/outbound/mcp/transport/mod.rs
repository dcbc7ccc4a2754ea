//! The transports MCP sessions run over, one room each.

pub mod stdio;
pub mod streamable_http;
