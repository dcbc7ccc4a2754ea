//! mcp-service's live replicas, each with a connection of its own, and which
//! of them a call goes to.
//!
//! A call with a session scope (a conversation's tool calls, resource reads
//! and prompts) goes to the replica that ranks first for that scope by
//! rendezvous hashing (highest random weight): every runs-service replica
//! ranks alike, so a conversation's upstream session lives in one
//! mcp-service replica whichever runs-service replica drives its run, and
//! when a replica comes or goes only the scopes it ranked first for move
//! (about 1/N of them). A call that could not be delivered to the first
//! tries the second, the same for every caller of that scope. Calls with no
//! scope take turns.

use std::{
    net::SocketAddr,
    sync::{
        Arc, RwLock, Weak,
        atomic::{AtomicUsize, Ordering},
    },
};

use sha2::{Digest as _, Sha256};
use tonic::transport::Channel;

/// The replicas found, by address; shared by the resolver, which changes
/// the set, and the client, which picks from it.
#[derive(Debug, Clone, Default)]
pub struct Replicas {
    live: Arc<RwLock<Vec<(SocketAddr, Channel)>>>,
    turn: Arc<AtomicUsize>,
}

impl Replicas {
    /// A handle that does not keep the set alive.
    pub(super) fn downgrade(&self) -> WeakReplicas {
        WeakReplicas {
            live: Arc::downgrade(&self.live),
            turn: Arc::downgrade(&self.turn),
        }
    }

    /// Adds a replica, or replaces its connection.
    pub(super) fn insert(&self, address: SocketAddr, channel: Channel) {
        if let Ok(mut live) = self.live.write() {
            live.retain(|(a, _)| *a != address);
            live.push((address, channel));
            live.sort_by_key(|(a, _)| *a);
        }
    }

    /// Forgets a replica.
    pub(super) fn remove(&self, address: SocketAddr) {
        if let Ok(mut live) = self.live.write() {
            live.retain(|(a, _)| *a != address);
        }
    }

    /// The replicas' connections in the order a call tries them: by rank
    /// for `scope`, or starting from the next in turn without one.
    pub(super) fn for_call(&self, scope: Option<&str>) -> Vec<Channel> {
        let Ok(live) = self.live.read() else {
            return Vec::new();
        };
        match scope.filter(|scope| !scope.is_empty()) {
            Some(scope) => {
                let addresses: Vec<SocketAddr> = live.iter().map(|(a, _)| *a).collect();
                ranked(scope, &addresses)
                    .into_iter()
                    .filter_map(|address| {
                        live.iter()
                            .find(|(a, _)| *a == address)
                            .map(|(_, c)| c.clone())
                    })
                    .collect()
            }
            None => {
                let start = self.turn.fetch_add(1, Ordering::Relaxed);
                let len = live.len().max(1);
                (0..live.len())
                    .map(|i| live[(start + i) % len].1.clone())
                    .collect()
            }
        }
    }
}

/// [`Replicas`] for as long as someone else holds it.
#[derive(Debug)]
pub(super) struct WeakReplicas {
    live: Weak<RwLock<Vec<(SocketAddr, Channel)>>>,
    turn: Weak<AtomicUsize>,
}

impl WeakReplicas {
    /// The set, unless every holder let it go.
    pub(super) fn upgrade(&self) -> Option<Replicas> {
        Some(Replicas {
            live: self.live.upgrade()?,
            turn: self.turn.upgrade()?,
        })
    }
}

/// `replicas` in the order calls of `scope` try them: highest weight first,
/// the weight of a replica a hash of the scope and its address. The same on
/// every runs-service replica and across restarts, so that all of a scope's
/// calls meet in one mcp-service replica.
pub fn ranked(scope: &str, replicas: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut weighted: Vec<(u64, SocketAddr)> = replicas
        .iter()
        .map(|address| (weight(scope, *address), *address))
        .collect();
    weighted.sort_unstable_by(|a, b| b.cmp(a));
    weighted.into_iter().map(|(_, address)| address).collect()
}

fn weight(scope: &str, address: SocketAddr) -> u64 {
    let digest = Sha256::new()
        .chain_update(scope.as_bytes())
        .chain_update([0])
        .chain_update(address.to_string().as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas(n: u16) -> Vec<SocketAddr> {
        (0..n)
            .map(|i| SocketAddr::from(([10, 0, 0, 1], 50051 + i)))
            .collect()
    }

    #[test]
    fn a_scope_ranks_the_same_replicas_alike_in_any_order() {
        let set = replicas(5);
        let mut reversed = set.clone();
        reversed.reverse();
        for scope in ["t1", "t2", "a-thread"] {
            assert_eq!(ranked(scope, &set), ranked(scope, &reversed));
            assert_eq!(ranked(scope, &set).len(), 5);
        }
    }

    #[test]
    fn a_replica_leaving_moves_only_the_scopes_it_ranked_first_for() {
        let five = replicas(5);
        let four = &five[..4];
        let gone = five[4];
        let scopes: Vec<String> = (0..10_000).map(|i| format!("thread-{i}")).collect();
        let mut moved = 0;
        let mut owned_by_gone = 0;
        for scope in &scopes {
            let before = ranked(scope, &five);
            let after = ranked(scope, four);
            if before[0] == gone {
                owned_by_gone += 1;
                // Its calls go where they fell back to before.
                assert_eq!(after[0], before[1]);
            } else if before[0] != after[0] {
                moved += 1;
            }
        }
        assert_eq!(moved, 0, "scopes of the replicas that stayed moved");
        // About a fifth of the scopes were the leaving replica's.
        assert!((1500..2500).contains(&owned_by_gone), "{owned_by_gone}");
    }

    #[test]
    fn scopes_spread_over_the_replicas() {
        let set = replicas(3);
        let mut counts = [0usize; 3];
        for i in 0..9_000 {
            let first = ranked(&format!("thread-{i}"), &set)[0];
            let index = set.iter().position(|a| *a == first).expect("one of them");
            counts[index] += 1;
        }
        for count in counts {
            assert!((2_500..3_500).contains(&count), "{counts:?}");
        }
    }
}
