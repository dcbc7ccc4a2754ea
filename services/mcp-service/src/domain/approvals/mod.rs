//! Approvals of gated tool calls: a policy rule holds a call until an
//! approver decides, and an approved call runs exactly once for the same
//! requester, integration, tool and arguments.
//!
//! The values it keeps and decides on live in [`super::approval`], which
//! the errors can name without looking up at the use case.

pub mod error;
pub mod ports;
pub mod service;

pub use super::approval::{
    Approval, ApprovalLimits, ApprovalState, Binding, MAX_ID_BYTES, Mismatch, RedeemRefusal,
    mismatch, refusal,
};
pub use super::digest::arguments_digest;
pub use error::ApprovalError;

#[cfg(test)]
mod tests;
