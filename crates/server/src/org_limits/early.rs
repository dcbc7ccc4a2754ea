//! Refusals at an organization's rate answered before the token is verified
//! again.
//!
//! A caller that keeps calling past its organization's rate makes refused
//! calls, each costing a whole gRPC request: HTTP/2, the token's signature
//! and claims, routing, the limits. When a call is refused at the rate, the
//! exact token it carried is remembered, with its organization, until the
//! organization's next token. A call carrying the same token before then is
//! refused at once, before its signature is checked, as the limits would
//! refuse it after.
//!
//! What a caller cannot do with this: only a token that was verified, and
//! whose organization was refused, is remembered, so a token that was never
//! verified (a forged one naming another organization, whatever its claims
//! say) never matches and goes on to be verified and refused as before. A
//! refusal made here spends nothing of anyone's: no token of a bucket, no
//! slot, nothing an organization is counted by. A token is remembered only
//! as a digest, for as long as its organization's wait (at most a second
//! or so at the lowest rate), and at most a bounded number at once: past
//! that, calls are verified and refused as before. A token that expires in
//! that window is refused at the rate rather than as expired until the
//! wait ends.

use std::{
    collections::HashMap,
    num::NonZeroU32,
    sync::{
        Mutex, MutexGuard, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
};

use sha2::{Digest as _, Sha256};
use tokio::time::Instant;

/// A remembered refusal: the token's organization, its rate, and the time
/// its next token comes.
#[derive(Debug, Clone)]
pub struct RefusedUntil {
    /// The organization the verified token belongs to.
    pub org: String,
    /// The organization's calls per second.
    pub rate: NonZeroU32,
    /// When the organization's next token comes.
    pub until: Instant,
}

/// Tokens refused at their organization's rate, by digest, until their
/// organization's next token; at most `most` at once.
#[derive(Debug)]
pub struct RefusedTokens {
    most: usize,
    /// How many are remembered, read without the lock on every call.
    count: AtomicUsize,
    tokens: Mutex<HashMap<[u8; 32], RefusedUntil>>,
}

impl RefusedTokens {
    /// Remembers at most `most` tokens at once; zero remembers none.
    pub fn new(most: usize) -> Self {
        Self {
            most,
            count: AtomicUsize::new(0),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    fn locked(&self) -> MutexGuard<'_, HashMap<[u8; 32], RefusedUntil>> {
        // Plain entries, each written whole: nothing to repair after a panic.
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers that `token`, verified, was refused at its organization's
    /// rate; when as many are remembered already, forgets those whose wait
    /// is over, and this one if none is.
    pub fn remember(&self, token: &str, refused: RefusedUntil) {
        if self.most == 0 {
            return;
        }
        let now = Instant::now();
        let mut tokens = self.locked();
        if tokens.len() >= self.most {
            tokens.retain(|_, entry| entry.until > now);
        }
        if tokens.len() < self.most {
            tokens.insert(digest(token), refused);
        }
        self.count.store(tokens.len(), Ordering::Relaxed);
    }

    /// The refusal remembered for `token` whose wait is not over yet.
    pub fn refused(&self, token: &str) -> Option<RefusedUntil> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let key = digest(token);
        let mut tokens = self.locked();
        let entry = tokens.get(&key)?;
        if entry.until > Instant::now() {
            return Some(entry.clone());
        }
        tokens.remove(&key);
        self.count.store(tokens.len(), Ordering::Relaxed);
        None
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn until(org: &str, after: Duration) -> RefusedUntil {
        RefusedUntil {
            org: org.to_owned(),
            rate: NonZeroU32::new(10).expect("not zero"),
            until: Instant::now() + after,
        }
    }

    #[tokio::test]
    async fn a_token_is_refused_until_its_organizations_next_token_and_no_other_is() {
        let tokens = RefusedTokens::new(8);
        assert!(tokens.refused("aaa.bbb.ccc").is_none(), "nothing yet");
        tokens.remember("aaa.bbb.ccc", until("flood", Duration::from_millis(50)));
        let refused = tokens.refused("aaa.bbb.ccc").expect("remembered");
        assert_eq!(refused.org, "flood");
        // The same claims under another signature are another token.
        assert!(tokens.refused("aaa.bbb.ccd").is_none());
        assert!(tokens.refused("aaa.bbb").is_none());
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(tokens.refused("aaa.bbb.ccc").is_none(), "the wait is over");
        assert!(tokens.locked().is_empty(), "and forgotten");
    }

    #[tokio::test]
    async fn at_most_so_many_are_remembered_and_those_waited_out_make_room() {
        let tokens = RefusedTokens::new(2);
        tokens.remember("one", until("a", Duration::from_millis(30)));
        tokens.remember("two", until("b", Duration::from_secs(10)));
        tokens.remember("three", until("c", Duration::from_secs(10)));
        assert!(tokens.refused("three").is_none(), "no room: not remembered");
        assert!(tokens.refused("one").is_some());
        tokio::time::sleep(Duration::from_millis(40)).await;
        tokens.remember("three", until("c", Duration::from_secs(10)));
        assert!(tokens.refused("three").is_some(), "one's wait is over");
        assert!(tokens.refused("two").is_some());
        assert_eq!(tokens.locked().len(), 2);

        let none = RefusedTokens::new(0);
        none.remember("one", until("a", Duration::from_secs(10)));
        assert!(none.refused("one").is_none(), "zero remembers none");
    }
}
