//! The process's open-file limit, and the connection caps derived from it:
//! every accepted connection is a file descriptor, and a process out of
//! them can accept no health probe, open no database connection and reach
//! no upstream server.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The soft limit assumed when the process has none.
const UNLIMITED: u64 = 1 << 20;
/// The fewest descriptors kept out of the listeners' reach, whatever the
/// limit: database pools, upstream servers and models, files, the metrics
/// listener.
const MIN_RESERVE: u64 = 256;
/// Listeners that may share a process's descriptors (gRPC and the MCP
/// endpoint); each gets an equal share of what the reserve leaves.
const LISTENERS: u64 = 2;

/// How many connections a listener holds, derived from the open-file limit
/// unless set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionCaps {
    /// Connections open at once; at the cap a new one evicts the oldest
    /// unauthenticated one, or is closed when every one is authenticated.
    pub max_connections: usize,
    /// Connections open at once that have not authenticated; at the cap a
    /// new one evicts the oldest of them.
    pub max_unauthenticated: usize,
    /// Unauthenticated connections from one IP address; at the cap a new
    /// one evicts that address's oldest.
    pub max_unauthenticated_per_ip: usize,
    /// Authenticated connections of one organization; past it a connection
    /// of that organization stays unauthenticated (evictable).
    pub max_per_org: usize,
}

/// The process's open-file limit and the share of it the listeners get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdBudget {
    /// The soft `RLIMIT_NOFILE`.
    pub soft_limit: u64,
    /// Descriptors left to everything but the listeners.
    pub reserve: u64,
}

impl FdBudget {
    /// The budget of this process, from its soft `RLIMIT_NOFILE`.
    pub fn of_process() -> Self {
        Self::of_limit(getrlimit(Resource::Nofile).current.unwrap_or(UNLIMITED))
    }

    /// The budget under a soft limit of `soft_limit` descriptors: a quarter
    /// (at least [`MIN_RESERVE`]) is kept in reserve.
    pub fn of_limit(soft_limit: u64) -> Self {
        let reserve = (soft_limit / 4).max(MIN_RESERVE).min(soft_limit);
        Self {
            soft_limit,
            reserve,
        }
    }

    /// The caps of one listener: an equal share of what the reserve leaves,
    /// half of it for connections not yet authenticated, a quarter of that
    /// per IP address, a quarter of the share per organization, so that
    /// neither one source nor one organization can take a listener's
    /// descriptors.
    pub fn caps(&self) -> ConnectionCaps {
        let share = (self.soft_limit.saturating_sub(self.reserve) / LISTENERS).max(16);
        let share = usize::try_from(share).unwrap_or(usize::MAX);
        let max_unauthenticated = (share / 2).max(8);
        ConnectionCaps {
            max_connections: share,
            max_unauthenticated,
            max_unauthenticated_per_ip: (max_unauthenticated / 4).max(4),
            max_per_org: (share / 4).max(4),
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; what a test holding
/// thousands of connections needs. Returns the soft limit now in force.
pub fn raise_nofile_to_hard_limit() -> u64 {
    let limit = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if setrlimit(Resource::Nofile, raised).is_err() {
        return limit.current.unwrap_or(UNLIMITED);
    }
    getrlimit(Resource::Nofile).current.unwrap_or(UNLIMITED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caps_leave_a_reserve_and_split_the_rest() {
        let common = FdBudget::of_limit(1024);
        assert_eq!(common.reserve, 256);
        let caps = common.caps();
        assert_eq!(caps.max_connections, 384);
        assert_eq!(caps.max_unauthenticated, 192);
        assert_eq!(caps.max_unauthenticated_per_ip, 48);
        assert_eq!(caps.max_per_org, 96);
        let kubernetes = FdBudget::of_limit(1 << 20);
        assert_eq!(kubernetes.reserve, 1 << 18);
        assert_eq!(kubernetes.caps().max_connections, 3 << 17);
        let tiny = FdBudget::of_limit(100);
        assert_eq!(tiny.reserve, 100, "never more than the limit");
        assert_eq!(tiny.caps().max_connections, 16, "a floor to serve at all");
    }
}
