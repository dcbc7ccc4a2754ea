//! What can go wrong reading the trail. The service error wraps it from
//! above; `inbound` maps it to a gRPC status.

/// A failure of reading or verifying the trail.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The caller lacks a role.
    #[error("{0}")]
    Forbidden(&'static str),
    /// Anything unexpected (storage).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}
