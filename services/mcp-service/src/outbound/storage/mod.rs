//! Integrations and their secrets at rest: SQL storage, and the key ring
//! that seals secrets before they reach the database.

pub mod approvals;
pub mod audit;
pub mod audit_writer;
pub mod policies;
pub mod secret_box;
pub mod sql;
pub mod toolsets;
