//! The audit trail: who called what through mcp-service, how it ended, and
//! every change to integrations and policies, appended per organization to a
//! hash chain so that editing or removing a stored event is found.
//!
//! [`record`] holds the record, [`chain`] its canonical form, hash and the
//! verification, [`ports`] the [`AuditLog`] port, [`recorder`] what the use
//! cases call and [`trail`] the reading and verification; the decorators
//! that record the use cases are in [`super::audited`].

pub mod chain;
pub mod error;
pub mod ports;
pub mod record;
pub mod recorder;
pub mod retention;
pub mod trail;

pub use super::audited::{calls, changes};
pub use error::AuditError;
pub use ports::{AuditLog, AuditQuery, ChainAnchor};
pub use record::{AuditAction, AuditEvent, AuditOutcome, AuditRecord};
pub use recorder::{AuditSettings, Auditor};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod trail_tests;
