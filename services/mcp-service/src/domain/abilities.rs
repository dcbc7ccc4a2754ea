//! What the MCP client of each endpoint session declared it can answer
//! beyond elicitations: a sampling (`sampling/createMessage`) and its
//! roots (`roots/list`). The upstream sessions opened for a client session
//! declare to their servers what that client declared, so that a server
//! asks only what someone can answer; a session of anyone else (gRPC
//! calls, discovery, a client that declared neither) declares neither.
//!
//! Entries are per client session, by organization and upstream session
//! scope, and go with the session: never more than the sessions open.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use super::{integration::OrgId, ports::SessionScope};

/// What a client declared it answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Abilities {
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `roots/list`.
    pub roots: bool,
}

/// The abilities of the endpoint's client sessions.
#[derive(Debug, Default)]
pub struct ClientAbilities {
    sessions: Mutex<HashMap<(OrgId, SessionScope), Abilities>>,
}

impl ClientAbilities {
    fn sessions(&self) -> MutexGuard<'_, HashMap<(OrgId, SessionScope), Abilities>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records what the client session of `scope` in `org` declared, while
    /// the returned guard lives.
    pub fn declare(
        self: &Arc<Self>,
        org: &OrgId,
        scope: &SessionScope,
        abilities: Abilities,
    ) -> AbilitiesGuard {
        let key = (org.clone(), scope.clone());
        self.sessions().insert(key.clone(), abilities);
        AbilitiesGuard {
            abilities: self.clone(),
            key,
        }
    }

    /// What the client session of `scope` in `org` declared; nothing when
    /// it is no client session's.
    pub fn of(&self, org: &OrgId, scope: &SessionScope) -> Abilities {
        self.sessions()
            .get(&(org.clone(), scope.clone()))
            .copied()
            .unwrap_or_default()
    }

    /// Whether no session is recorded.
    pub fn is_empty(&self) -> bool {
        self.sessions().is_empty()
    }
}

/// A client session's declaration; forgotten when dropped.
#[derive(Debug)]
pub struct AbilitiesGuard {
    abilities: Arc<ClientAbilities>,
    key: (OrgId, SessionScope),
}

impl Drop for AbilitiesGuard {
    fn drop(&mut self) {
        self.abilities.sessions().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_abilities_are_its_own_and_go_with_it() {
        let abilities = Arc::new(ClientAbilities::default());
        let org = OrgId("a".to_owned());
        let ours = SessionScope::new("ada", "mcp-session:1");
        let both = Abilities {
            sampling: true,
            roots: true,
        };
        let guard = abilities.declare(&org, &ours, both);
        assert_eq!(abilities.of(&org, &ours), both);
        let theirs = SessionScope::new("ada", "mcp-session:2");
        assert_eq!(abilities.of(&org, &theirs), Abilities::default());
        assert_eq!(
            abilities.of(&OrgId("b".to_owned()), &ours),
            Abilities::default()
        );
        drop(guard);
        assert!(abilities.is_empty());
    }
}
