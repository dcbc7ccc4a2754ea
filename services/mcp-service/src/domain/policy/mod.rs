//! An organization's tool policy: rules in CEL over the caller and what they
//! call, deciding whether a call goes ahead, is refused, or waits for an
//! approver.
//!
//! [`model`] holds what an admin writes, [`validate`] checks it on write,
//! [`condition`] compiles and bounds the CEL, [`decide`] combines the rules
//! of an organization into one [`decide::Verdict`], [`engine`] keeps each
//! organization's compiled rules and [`service`] is the use cases behind
//! `PolicyService`.

pub mod condition;
pub mod decide;
pub mod enforce;
pub mod engine;
pub mod error;
pub mod facts;
pub mod model;
pub mod ports;
pub mod service;
pub mod validate;

pub use super::gate::Gate;
pub use error::{PolicyError, PolicyStoreError};

#[cfg(test)]
mod tests;
