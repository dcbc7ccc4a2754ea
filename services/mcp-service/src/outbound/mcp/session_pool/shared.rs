//! An organization's upstream sessions and stdio processes counted across
//! the replicas of mcp-service.
//!
//! Each replica holds leases of its organizations' sessions in grants of a
//! shared store (the `org_session_grants` and `org_stdio_grants` tables on
//! PostgreSQL, memory on SQLite), the way calls in flight are counted: a
//! session takes a lease of its replica's grant, without a round trip while
//! the grant has room, and gives it back when it closes. A replica that
//! stops gracefully gives its grants up; a dead one's expire when nobody
//! renews them, so its count drains.

use std::{sync::Arc, time::Duration};

use switchboard_server::{GrantedSlots, NotAdmitted, OrgLimitTable};
use tokio::time::Instant;

use super::PoolLimits;
use crate::domain::{integration::OrgId, ports::CallError};

/// Why a lease was refused.
#[derive(Debug)]
pub enum LeaseRefused {
    /// The organization holds `limit` sessions (stdio processes when
    /// `stdio`) on all replicas together.
    AtLimit { stdio: bool, limit: usize },
    /// The store could not be asked.
    Store(anyhow::Error),
}

impl LeaseRefused {
    /// What the caller is told, to try again after `retry_after`.
    pub fn into_call_error(self, org: &OrgId, retry_after: Duration) -> CallError {
        let message = match self {
            Self::AtLimit { stdio: true, limit } => format!(
                "the organization runs {limit} stdio MCP servers, its limit, and all are in use"
            ),
            Self::AtLimit {
                stdio: false,
                limit,
            } => format!(
                "the organization has {limit} open MCP sessions, its limit, and all are in use"
            ),
            Self::Store(error) => {
                tracing::warn!(org_id = %org, error = %format!("{error:#}"), "MCP sessions of the organization not counted");
                "the organization's MCP sessions could not be counted".to_owned()
            }
        };
        CallError::Exhausted {
            message,
            retry_after,
        }
    }
}

/// The per-organization limits of sessions, their defaults and overrides.
#[derive(Debug, Clone)]
pub struct SessionQuotas {
    /// Each organization's own limits (the limits file).
    pub table: OrgLimitTable,
    /// Sessions of an organization without its own limit.
    pub sessions: usize,
    /// Stdio processes of an organization without its own limit.
    pub stdio_processes: usize,
}

impl SessionQuotas {
    /// `org`'s limits of sessions and of stdio processes.
    pub fn of(&self, org: &OrgId) -> (usize, usize) {
        let own = self.table.of(&org.0);
        (
            own.sessions.unwrap_or(self.sessions),
            own.stdio_processes.unwrap_or(self.stdio_processes),
        )
    }
}

/// Sessions and stdio processes per organization, across replicas.
#[derive(Debug)]
pub struct SharedSessions {
    quotas: SessionQuotas,
    sessions: GrantedSlots,
    stdio: GrantedSlots,
}

/// One session (or probe) counted against its organization until dropped.
#[derive(Debug)]
pub struct SessionLease {
    shared: Arc<SharedSessions>,
    org: OrgId,
    stdio: bool,
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        self.shared.sessions.end(&self.org.0);
        if self.stdio {
            self.shared.stdio.end(&self.org.0);
        }
    }
}

impl SharedSessions {
    /// Leases counted in `sessions` and `stdio` (each its own store),
    /// within `quotas`.
    pub fn new(quotas: SessionQuotas, sessions: GrantedSlots, stdio: GrantedSlots) -> Self {
        Self {
            quotas,
            sessions,
            stdio,
        }
    }

    /// `pool`'s limits, with `org`'s own limits of sessions.
    pub fn limits_of(&self, org: &OrgId, pool: PoolLimits) -> PoolLimits {
        let (sessions, stdio) = self.quotas.of(org);
        PoolLimits {
            max_sessions_per_org: sessions,
            max_stdio_sessions_per_org: stdio,
            ..pool
        }
    }

    /// A lease of one more session of `org` (a stdio one when `stdio`), or
    /// why not; never waits for one to close.
    pub async fn lease(
        self: &Arc<Self>,
        org: &OrgId,
        stdio: bool,
    ) -> Result<SessionLease, LeaseRefused> {
        let (sessions, processes) = self.quotas.of(org);
        if stdio {
            admit(&self.stdio, org, processes)
                .await
                .map_err(|e| refused(e, true, processes))?;
        }
        if let Err(error) = admit(&self.sessions, org, sessions).await {
            if stdio {
                self.stdio.end(&org.0);
            }
            return Err(refused(error, false, sessions));
        }
        Ok(SessionLease {
            shared: self.clone(),
            org: org.clone(),
            stdio,
        })
    }

    /// Gives up this replica's grants of sessions and stdio processes (it
    /// stops), so that the other replicas may open as many as the limits
    /// at once rather than when the grants expire.
    pub async fn release(&self) {
        futures::future::join(self.sessions.release(), self.stdio.release()).await;
    }

    /// Renews this replica's grants every `period` and gives back the
    /// leases no session used since the last time, while the returned task
    /// runs.
    pub fn spawn_heartbeat(self: &Arc<Self>, period: Duration) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let Some(shared) = weak.upgrade() else { break };
                shared.sessions.beat().await;
                shared.stdio.beat().await;
            }
        })
    }
}

async fn admit(slots: &GrantedSlots, org: &OrgId, limit: usize) -> Result<(), NotAdmitted> {
    // A new session never waits for another to close: the caller closes
    // one of its own idle ones, or is refused.
    slots.admit(&org.0, limit, Instant::now()).await
}

fn refused(error: NotAdmitted, stdio: bool, limit: usize) -> LeaseRefused {
    match error {
        NotAdmitted::AtLimit => LeaseRefused::AtLimit { stdio, limit },
        NotAdmitted::Store(error) => LeaseRefused::Store(error),
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use switchboard_server::{GrantSettings, MemorySlotGrants, OrgLimits, SlotGrants};

    use super::*;

    /// A replica's sessions counted in `sessions` and `stdio`, one stdio
    /// process and two sessions per organization.
    fn replica(
        name: &str,
        sessions: &Arc<dyn SlotGrants>,
        stdio: &Arc<dyn SlotGrants>,
    ) -> Arc<SharedSessions> {
        let settings = GrantSettings {
            batch: 1,
            ttl: Duration::from_secs(600),
            token_batch: 1,
        };
        let quotas = SessionQuotas {
            table: OrgLimitTable::uniform(OrgLimits {
                concurrency: 8,
                rate: NonZeroU32::MIN,
                burst: NonZeroU32::MIN,
                sessions: None,
                stdio_processes: None,
                data_source_bytes: None,
            }),
            sessions: 2,
            stdio_processes: 1,
        };
        Arc::new(SharedSessions::new(
            quotas,
            GrantedSlots::new(name.to_owned(), sessions.clone(), settings),
            GrantedSlots::new(name.to_owned(), stdio.clone(), settings),
        ))
    }

    #[tokio::test]
    async fn a_replica_that_stops_gives_its_sessions_and_processes_to_another_at_once() {
        let ttl = Duration::from_secs(600);
        let sessions: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let stdio: Arc<dyn SlotGrants> = Arc::new(MemorySlotGrants::new(ttl));
        let (a, b) = (
            replica("a", &sessions, &stdio),
            replica("b", &sessions, &stdio),
        );
        let org = OrgId("org".to_owned());
        let held = (
            a.lease(&org, true).await.expect("a's process"),
            a.lease(&org, false).await.expect("a's session"),
        );
        assert!(matches!(
            b.lease(&org, false).await,
            Err(LeaseRefused::AtLimit {
                stdio: false,
                limit: 2
            })
        ));

        a.release().await;
        drop(held);
        let _process = b.lease(&org, true).await.expect("a's process, on b");
        let _session = b.lease(&org, false).await.expect("a's session, on b");
        assert!(matches!(
            b.lease(&org, false).await,
            Err(LeaseRefused::AtLimit { .. })
        ));
    }
}
