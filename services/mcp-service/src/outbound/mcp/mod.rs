//! The MCP client: connecting through a transport, the sessions and their
//! pool, discovery, calls (with tasks and input rounds), and hearing of
//! changes.

pub mod connect;
pub mod discovery;
pub mod elicitation;
pub mod gateway;
pub mod input_required;
pub mod listen;
mod operation;
pub mod progress;
pub mod session_pool;
mod session_requests;
pub mod sessions;
pub mod tasks;
pub mod transport;
