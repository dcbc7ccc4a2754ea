//! Adapters to the systems runs-service calls.

pub mod callers;
pub mod datasource;
pub mod llm;
pub mod mcp;
pub mod sql;
