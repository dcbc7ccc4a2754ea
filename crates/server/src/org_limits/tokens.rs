//! Where the replicas of a service take the tokens of each organization's
//! calls per second, so that all of them together keep to its rate.
//!
//! Each organization has one bucket, shared by every replica: it holds up
//! to the organization's burst and fills at its rate. A replica takes
//! tokens from it in batches and spends them on its calls without asking
//! anyone; only when its tokens are spent does it ask the bucket again.
//! Tokens taken are gone from the bucket whether or not they are spent, so
//! the replicas together never spend more than the bucket gave.

use std::{collections::HashMap, fmt, num::NonZeroU32, sync::Mutex, time::Duration};

use futures::future::BoxFuture;
use tokio::time::Instant;

/// What a replica asks of an organization's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenAsk {
    /// Tokens it would like (its batch).
    pub want: u32,
    /// The organization's calls per second: the bucket's refill.
    pub rate: NonZeroU32,
    /// The organization's burst: the bucket's size.
    pub burst: NonZeroU32,
}

/// What the bucket gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Taken {
    /// Tokens taken, for the replica to spend.
    pub tokens: u32,
    /// When none were: how long until the bucket holds one again.
    pub retry_after: Duration,
}

/// Takes from a bucket holding `held` tokens (already refilled, at most the
/// burst) what `ask` gets, and returns it with the tokens left.
///
/// A whole batch while the bucket holds one, so that the next calls are
/// admitted without asking; below that, every whole token it holds. Taking
/// one token at a time near empty would keep fewer idle in one replica, but
/// an organization calling at its rate keeps its bucket near empty, and
/// would then pay a transaction per call, capped by the row lock at a few
/// hundred a second whatever its rate; taking what is there keeps a
/// transaction's worth of calls per round trip, and what one replica holds
/// idle below a batch.
pub fn take(held: f64, ask: TokenAsk) -> (Taken, f64) {
    let want = ask.want.clamp(1, ask.burst.get());
    // Whole tokens only, at most the batch; `held` is at most the burst.
    let tokens = held.floor().clamp(0.0, f64::from(want)) as u32;
    let left = held - f64::from(tokens);
    let retry_after = if tokens == 0 {
        Duration::from_secs_f64(((1.0 - held) / f64::from(ask.rate.get())).max(0.001))
    } else {
        Duration::ZERO
    };
    (
        Taken {
            tokens,
            retry_after,
        },
        left,
    )
}

/// The tokens of a bucket that held `held` after `elapsed` of refill at
/// `ask`'s rate, at most its burst. A bucket never seen is full.
pub fn refill(held: Option<f64>, elapsed: Duration, ask: TokenAsk) -> f64 {
    let burst = f64::from(ask.burst.get());
    match held {
        Some(held) => {
            let grown = held.max(0.0) + elapsed.as_secs_f64() * f64::from(ask.rate.get());
            grown.min(burst)
        }
        None => burst,
    }
}

/// The store of the buckets: PostgreSQL when the replicas share one, memory
/// when the process is the only replica.
pub trait TokenBuckets: Send + Sync + fmt::Debug + 'static {
    /// Refills `org`'s bucket to now and takes what [`take`] gives `ask`.
    fn take<'a>(&'a self, org: &'a str, ask: TokenAsk) -> BoxFuture<'a, anyhow::Result<Taken>>;
}

/// Buckets in the process's memory: for one replica (SQLite), and for tests
/// of several replicas in one process.
#[derive(Debug, Default)]
pub struct MemoryTokenBuckets {
    /// Per organization, its tokens and when they were counted.
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl MemoryTokenBuckets {
    /// No bucket yet: each organization's starts full.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenBuckets for MemoryTokenBuckets {
    fn take<'a>(&'a self, org: &'a str, ask: TokenAsk) -> BoxFuture<'a, anyhow::Result<Taken>> {
        let now = Instant::now();
        // Every holder leaves the map whole, so a panic elsewhere while
        // holding it leaves nothing to repair.
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = buckets
            .get(org)
            .map(|&(held, at)| refill(Some(held), now.saturating_duration_since(at), ask));
        let (taken, left) = take(
            held.unwrap_or_else(|| refill(None, Duration::ZERO, ask)),
            ask,
        );
        if left >= f64::from(ask.burst.get()) {
            // A full bucket is the same as none: the map keeps only the
            // organizations that spent recently.
            buckets.remove(org);
        } else {
            buckets.insert(org.to_owned(), (left, now));
        }
        Box::pin(std::future::ready(Ok(taken)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(want: u32, rate: u32, burst: u32) -> TokenAsk {
        TokenAsk {
            want,
            rate: NonZeroU32::new(rate).expect("not zero"),
            burst: NonZeroU32::new(burst).expect("not zero"),
        }
    }

    #[test]
    fn a_batch_is_taken_while_the_bucket_holds_one_and_what_is_left_below() {
        let a = ask(8, 10, 100);
        assert_eq!(take(100.0, a).0.tokens, 8);
        assert_eq!(take(8.0, a).0.tokens, 8);
        assert_eq!(take(7.9, a).0.tokens, 7);
        assert_eq!(take(1.0, a).0.tokens, 1);
        let (none, left) = take(0.5, a);
        assert_eq!(none.tokens, 0);
        assert_eq!(left, 0.5);
        // Half a token at ten a second: 50 ms to the next one.
        assert_eq!(none.retry_after, Duration::from_millis(50));
        // A batch larger than the bucket is cut to it.
        assert_eq!(take(2.0, ask(16, 1, 2)).0.tokens, 2);
    }

    #[test]
    fn a_bucket_refills_at_the_rate_up_to_its_burst() {
        let a = ask(1, 10, 20);
        assert_eq!(refill(None, Duration::ZERO, a), 20.0);
        assert_eq!(refill(Some(0.0), Duration::from_millis(500), a), 5.0);
        assert_eq!(refill(Some(15.0), Duration::from_secs(60), a), 20.0);
    }
}
