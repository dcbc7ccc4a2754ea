//! Reading the trail (admins only): events by filter, newest first, and the
//! check of the organization's chain.

use std::sync::Arc;

use switchboard_auth::Principal;

use super::{
    chain::{Verdict, Verifier},
    ports::{AuditLog, AuditQuery},
    record::AuditEvent,
};
use crate::domain::error::McpError;

/// Events per page when the request names no size.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// Most events per page.
pub const MAX_PAGE_SIZE: usize = 1000;
/// Events read at a time while verifying.
const VERIFY_PAGE: usize = 1000;

/// The read side of the trail.
#[derive(Clone)]
pub struct AuditTrail {
    log: Arc<dyn AuditLog>,
}

impl std::fmt::Debug for AuditTrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditTrail").finish_non_exhaustive()
    }
}

fn require_admin(caller: &Principal) -> Result<(), McpError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(McpError::Forbidden(
            "reading the audit trail needs the admin role",
        ))
    }
}

impl AuditTrail {
    /// Reads `log`.
    pub fn new(log: Arc<dyn AuditLog>) -> Self {
        Self { log }
    }

    /// The caller's organization's events matching `query`, newest first;
    /// what this replica recorded before is included.
    pub async fn list(
        &self,
        caller: &Principal,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEvent>, McpError> {
        require_admin(caller)?;
        self.log.flush().await?;
        Ok(self.log.list(&caller.org_id, query).await?)
    }

    /// Checks the caller's organization's chain from its first kept event.
    pub async fn verify(&self, caller: &Principal) -> Result<Verdict, McpError> {
        require_admin(caller)?;
        self.log.flush().await?;
        let org = &caller.org_id;
        let bounds = self.log.bounds(org).await?;
        let mut verifier = Verifier::new(bounds);
        loop {
            let page = self
                .log
                .chain_page(org, verifier.position(), VERIFY_PAGE)
                .await?;
            for event in &page {
                verifier.check(event);
            }
            if page.len() < VERIFY_PAGE || verifier.is_broken() {
                break;
            }
        }
        Ok(verifier.finish())
    }
}
