//! The use cases with their audit: decorators over [`super::calls`] and
//! [`super::service`] that record each call and each change in the
//! [`super::audit`] trail as it ends.
//!
//! [`calls`] records tool calls, resource reads, prompts and completed
//! authorizations; [`changes`] the writes to integrations.

pub mod calls;
pub mod changes;
