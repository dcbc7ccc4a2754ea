//! Verified tokens, remembered for a short while so that a caller sending
//! the same bearer token on every call is not verified (signature, claims)
//! again on each one.
//!
//! An entry is keyed by the token's exact text, so a token is only ever
//! answered from its own entry. It is served until the earlier of the
//! token's `exp` and [`MAX_AGE`] after it was verified: past its expiry a
//! token is verified again (and refused). Only tokens of a static key are
//! remembered (see `Authenticator::check_static`). The map holds at most
//! [`MAX_ENTRIES`] tokens of at most [`MAX_TOKEN_BYTES`] each.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::{Principal, token::unix_now};

/// Longest time a verified token is served without being verified again.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(60);

/// Most tokens remembered at once.
pub(crate) const MAX_ENTRIES: usize = 1024;

/// Longest token remembered; longer ones are verified on every call.
pub(crate) const MAX_TOKEN_BYTES: usize = 4096;

struct Entry {
    principal: Principal,
    /// The token's `exp`, seconds since the Unix epoch.
    expires: u64,
    verified: Instant,
}

impl Entry {
    fn fresh(&self, now_unix: u64, now: Instant) -> bool {
        now_unix < self.expires && now.duration_since(self.verified) < MAX_AGE
    }
}

/// Tokens verified lately and who they name.
#[derive(Default)]
pub(crate) struct VerifiedTokens {
    entries: Mutex<HashMap<Box<str>, Entry>>,
}

impl VerifiedTokens {
    /// Who `token` names, when it was verified lately and has not expired.
    pub(crate) fn get(&self, token: &str) -> Option<Principal> {
        let mut entries = self.entries.lock().ok()?;
        let entry = entries.get(token)?;
        if entry.fresh(unix_now(), Instant::now()) {
            return Some(entry.principal.clone());
        }
        entries.remove(token);
        None
    }

    /// Remembers that `token`, expiring at `expires`, names `principal`.
    /// When the map is full, stale entries are dropped first; when every
    /// entry is fresh, the map is emptied (the tokens are verified again).
    pub(crate) fn insert(&self, token: &str, principal: &Principal, expires: u64) {
        if token.len() > MAX_TOKEN_BYTES {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(token) {
            let (now_unix, now) = (unix_now(), Instant::now());
            entries.retain(|_, entry| entry.fresh(now_unix, now));
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(
            token.into(),
            Entry {
                principal: principal.clone(),
                expires,
                verified: Instant::now(),
            },
        );
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map_or(0, |entries| entries.len())
    }

    /// Makes `token`'s entry look verified at `verified` and expiring at
    /// `expires`, as time passing would.
    #[cfg(test)]
    pub(crate) fn age(&self, token: &str, verified: Instant, expires: u64) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(entry) = entries.get_mut(token)
        {
            entry.verified = verified;
            entry.expires = expires;
        }
    }
}
