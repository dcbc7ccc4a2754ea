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

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

/// Refusals at a rate held before they are answered, within bounds.
#[derive(Debug)]
pub struct RefusalHold {
    /// The longest pause of one refusal.
    longest: Duration,
    /// The most refusals paused at once in the process.
    most: usize,
    held: AtomicUsize,
}

impl RefusalHold {
    /// Refusals paused `longest` at most, `most` at once.
    pub fn new(longest: Duration, most: usize) -> Self {
        Self {
            longest,
            most,
            held: AtomicUsize::new(0),
        }
    }

    /// Pauses a refusal whose organization's next token comes after `wait`:
    /// for `wait`, at most the longest pause and `within` (what the
    /// caller's deadline leaves); returns how long it paused, zero when as
    /// many refusals are paused already.
    pub async fn pause(&self, wait: Duration, within: Option<Duration>) -> Duration {
        let pause = within
            .map_or(wait, |within| wait.min(within))
            .min(self.longest);
        if pause.is_zero() {
            return Duration::ZERO;
        }
        let Some(_held) = self.enter() else {
            return Duration::ZERO;
        };
        tokio::time::sleep(pause).await;
        pause
    }

    fn enter(&self) -> Option<Held<'_>> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.most).then_some(held + 1)
            })
            .ok()
            .map(|_| Held(&self.held))
    }
}

/// One refusal paused, until dropped (answered, or its caller went away).
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::time::Instant;

    use super::*;

    #[tokio::test]
    async fn refusals_past_the_most_held_are_answered_at_once() {
        let hold = Arc::new(RefusalHold::new(Duration::from_millis(300), 2));
        let paused: Vec<_> = (0..2)
            .map(|_| {
                let hold = hold.clone();
                tokio::spawn(async move { hold.pause(Duration::from_secs(1), None).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        assert_eq!(
            hold.pause(Duration::from_secs(1), None).await,
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
            hold.pause(Duration::from_millis(20), None).await,
            Duration::from_millis(20),
            "no longer than the wait for a token"
        );
    }

    #[tokio::test]
    async fn a_pause_is_no_longer_than_the_callers_deadline_allows() {
        let hold = RefusalHold::new(Duration::from_secs(1), 8);
        let within = Some(Duration::from_millis(30));
        assert_eq!(
            hold.pause(Duration::from_millis(500), within).await,
            Duration::from_millis(30)
        );
        let nothing = RefusalHold::new(Duration::ZERO, 8);
        assert_eq!(
            nothing.pause(Duration::from_millis(500), None).await,
            Duration::ZERO,
            "a zero hold answers at once"
        );
    }
}
