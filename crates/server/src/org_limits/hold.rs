//! Refusals at an organization's rate answered after a short pause.
//!
//! A caller that calls again at once when refused (a closed loop that
//! ignores the retry delay) would otherwise make as many refused calls a
//! second as the process can answer, each a whole gRPC request on the cores
//! the other organizations' calls need. Answered after a pause as long as
//! the wait for the organization's next token (at most the hold setting),
//! such a caller slows itself to one call per pause, while a caller that
//! keeps to the retry delay waits no longer in all: the delay it is told
//! is shortened by the pause. Only so many refusals are held at once; past
//! that they are answered at once, as before.
//!
//! Refusals of one organization held at the same time are spread over its
//! next tokens: the `k`-th held waits `k` tokens more (`k / rate` longer).
//! Otherwise every caller of an organization that calls faster than its
//! rate comes back for the same next token, one of them gets it, and the
//! others make another refused call each: as many refusals a second as the
//! organization has callers times its rate. Spread, each comes back about
//! when a token is there for it, and the organization's refusals a second
//! stay near its rate however many callers it has.

use std::{
    collections::HashMap,
    num::NonZeroU32,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Duration,
};

/// Refusals at a rate held before they are answered, within bounds.
#[derive(Debug)]
pub struct RefusalHold {
    /// The longest pause of one refusal.
    longest: Duration,
    /// The most refusals paused at once in the process.
    most: usize,
    held: Mutex<Counts>,
}

/// The refusals paused now, in all and per organization (only the
/// organizations with one paused: at most `most` entries).
#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_org: HashMap<String, u32>,
}

impl RefusalHold {
    /// Refusals paused `longest` at most, `most` at once.
    pub fn new(longest: Duration, most: usize) -> Self {
        Self {
            longest,
            most,
            held: Mutex::new(Counts::default()),
        }
    }

    fn locked(&self) -> MutexGuard<'_, Counts> {
        // Plain counts that every holder leaves consistent.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pauses a refusal of `org`, allowed `rate` calls a second, whose next
    /// token comes after `wait`: for `wait` and one token more for each
    /// refusal of `org` paused already, at most the longest pause and
    /// `within` (what the caller's deadline leaves); returns how long it
    /// paused, zero when as many refusals are paused already.
    pub async fn pause(
        &self,
        org: &str,
        rate: NonZeroU32,
        wait: Duration,
        within: Option<Duration>,
    ) -> Duration {
        let longest = within.map_or(self.longest, |within| within.min(self.longest));
        if wait.min(longest).is_zero() {
            return Duration::ZERO;
        }
        let Some(held) = self.enter(org) else {
            return Duration::ZERO;
        };
        let pause = (wait + Duration::from_secs(u64::from(held.place)) / rate.get()).min(longest);
        tokio::time::sleep(pause).await;
        pause
    }

    /// Counts a refusal of `org` paused, and its place among the
    /// organization's paused ones; `None` when as many as allowed are.
    fn enter<'a>(&'a self, org: &str) -> Option<Held<'a>> {
        let mut counts = self.locked();
        if counts.total >= self.most {
            return None;
        }
        counts.total += 1;
        let paused = counts.per_org.entry(org.to_owned()).or_default();
        let place = *paused;
        *paused = paused.saturating_add(1);
        Some(Held {
            hold: self,
            org: org.to_owned(),
            place,
        })
    }
}

/// One refusal paused, until dropped (answered, or its caller went away).
struct Held<'a> {
    hold: &'a RefusalHold,
    org: String,
    /// How many of its organization's refusals were paused before it.
    place: u32,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut counts = self.hold.locked();
        counts.total = counts.total.saturating_sub(1);
        if let Some(paused) = counts.per_org.get_mut(&self.org) {
            *paused = paused.saturating_sub(1);
            if *paused == 0 {
                counts.per_org.remove(&self.org);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::time::Instant;

    use super::*;

    fn per_second(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("not zero")
    }

    #[tokio::test]
    async fn refusals_past_the_most_held_are_answered_at_once() {
        let hold = Arc::new(RefusalHold::new(Duration::from_millis(300), 2));
        let paused: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|org| {
                let hold = hold.clone();
                tokio::spawn(async move {
                    hold.pause(org, per_second(1), Duration::from_secs(1), None)
                        .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        assert_eq!(
            hold.pause("c", per_second(1), Duration::from_secs(1), None)
                .await,
            Duration::ZERO
        );
        assert!(started.elapsed() < Duration::from_millis(100));
        for paused in paused {
            assert_eq!(
                paused.await.expect("joined"),
                Duration::from_millis(300),
                "at most the longest pause"
            );
        }
        // Held ones answered, there is room again.
        assert_eq!(
            hold.pause("c", per_second(1), Duration::from_millis(20), None)
                .await,
            Duration::from_millis(20),
            "no longer than the wait for a token"
        );
        assert!(hold.locked().per_org.is_empty(), "nothing left counted");
    }

    #[tokio::test]
    async fn a_pause_is_no_longer_than_the_callers_deadline_allows() {
        let hold = RefusalHold::new(Duration::from_secs(1), 8);
        let within = Some(Duration::from_millis(30));
        assert_eq!(
            hold.pause("a", per_second(1), Duration::from_millis(500), within)
                .await,
            Duration::from_millis(30)
        );
        let nothing = RefusalHold::new(Duration::ZERO, 8);
        assert_eq!(
            nothing
                .pause("a", per_second(1), Duration::from_millis(500), None)
                .await,
            Duration::ZERO,
            "a zero hold answers at once"
        );
    }

    #[tokio::test]
    async fn an_organizations_refusals_held_at_once_are_spread_over_its_next_tokens() {
        let hold = Arc::new(RefusalHold::new(Duration::from_millis(250), 64));
        // Ten calls a second: a token every 100 ms, the next in 20 ms.
        let pause = |org: &'static str| {
            let hold = hold.clone();
            tokio::spawn(async move {
                hold.pause(org, per_second(10), Duration::from_millis(20), None)
                    .await
            })
        };
        let spread: Vec<_> = (0..4).map(|_| pause("flood")).collect();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let other = pause("other");
        let mut paused = Vec::new();
        for one in spread {
            paused.push(one.await.expect("joined"));
        }
        paused.sort_unstable();
        assert_eq!(
            paused,
            [20, 120, 220, 250].map(Duration::from_millis),
            "one token apart, at most the longest pause"
        );
        assert_eq!(
            other.await.expect("joined"),
            Duration::from_millis(20),
            "another organization's refusal waits only for its own next token"
        );
    }
}
