//! Reading the trail (admins only): events by filter, newest first, and the
//! check of the organization's chain.

use std::sync::Arc;

use switchboard_auth::Principal;

use super::{
    chain::{Verdict, Verifier},
    error::AuditError,
    ports::{AuditLog, AuditQuery},
    record::AuditEvent,
};

/// Events per page when the request names no size.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// Most events per page.
pub const MAX_PAGE_SIZE: usize = 1000;
/// Events read at a time while verifying.
const VERIFY_PAGE: usize = 1000;
/// How many times a check starts again because the retention purge removed
/// events it was about to read.
const VERIFY_ATTEMPTS: u32 = 3;

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

fn require_admin(caller: &Principal) -> Result<(), AuditError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(AuditError::Forbidden(
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
    ) -> Result<Vec<AuditEvent>, AuditError> {
        require_admin(caller)?;
        self.log.flush().await?;
        Ok(self.log.list(&caller.org_id, query).await?)
    }

    /// Checks the caller's organization's chain from its first kept event.
    ///
    /// Other replicas may append and the retention purge may remove events
    /// while the pages are read, so the head is read after the pages: an
    /// event read past it means the head moved back, and events short of
    /// it were appended meanwhile and are read on up to it. A check that
    /// found a gap the purge explains starts again from the new first kept
    /// event, at most [`VERIFY_ATTEMPTS`] times.
    pub async fn verify(&self, caller: &Principal) -> Result<Verdict, AuditError> {
        require_admin(caller)?;
        self.log.flush().await?;
        let org = &caller.org_id;
        let mut start = self.log.bounds(org).await?;
        let mut attempt = 1;
        loop {
            let mut verifier = Verifier::new(&start);
            self.read_pages(org, &mut verifier, None).await?;
            let end = self.log.bounds(org).await?;
            self.read_pages(org, &mut verifier, Some(end.head_sequence))
                .await?;
            let purged_meanwhile = verifier
                .broken_at()
                .is_some_and(|sequence| sequence <= end.purged_through)
                && end.purged_through > start.purged_through;
            if !purged_meanwhile || attempt == VERIFY_ATTEMPTS {
                return Ok(verifier.finish(&end));
            }
            attempt += 1;
            start = end;
        }
    }

    /// Reads and checks `org`'s events after the verifier's position, until
    /// none is left, a link is broken, or the event `up_to` was read.
    async fn read_pages(
        &self,
        org: &str,
        verifier: &mut Verifier,
        up_to: Option<i64>,
    ) -> Result<(), AuditError> {
        while !verifier.is_broken() {
            let limit = up_to.map_or(VERIFY_PAGE, |head| {
                usize::try_from(head - verifier.position())
                    .unwrap_or(0)
                    .min(VERIFY_PAGE)
            });
            if limit == 0 {
                break;
            }
            let page = self.log.chain_page(org, verifier.position(), limit).await?;
            for event in &page {
                verifier.check(event);
            }
            if page.len() < limit {
                break;
            }
        }
        Ok(())
    }
}
