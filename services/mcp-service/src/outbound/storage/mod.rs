//! Integrations and their secrets at rest: SQL storage; the key ring that
//! seals secrets before they reach the database is [`crate::sealing`],
//! named here too as `secret_box`.

pub mod approvals;
pub mod audit;
pub mod audit_writer;
pub mod endpoint_sessions;
pub mod policies;
pub mod sql;
pub mod toolsets;

pub use crate::sealing as secret_box;
