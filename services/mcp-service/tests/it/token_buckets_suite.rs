//! The [`TokenBuckets`] suite: every store of the buckets of calls per
//! second keeps the rules `switchboard_server::org_limits::tokens` states,
//! the one in memory and the one in PostgreSQL alike.

use std::{num::NonZeroU32, sync::Arc, time::Duration};

use switchboard_mcp_service::outbound::storage::sql::MIGRATIONS;
use switchboard_server::{MemoryTokenBuckets, PgTokenBuckets, TokenAsk, TokenBuckets};
use switchboard_test_support::TestDb;

/// Which store a case runs on.
#[derive(Debug, Clone, Copy)]
enum Impl {
    Memory,
    Postgres,
}

/// Two handles on one store: the same buckets in memory, two pools on one
/// database, as two replicas hold them.
struct Buckets {
    first: Arc<dyn TokenBuckets>,
    second: Arc<dyn TokenBuckets>,
    _db: Option<TestDb>,
}

async fn buckets(of: Impl) -> Buckets {
    match of {
        Impl::Memory => {
            let shared = Arc::new(MemoryTokenBuckets::new());
            Buckets {
                first: shared.clone(),
                second: shared,
                _db: None,
            }
        }
        Impl::Postgres => {
            let db = TestDb::postgres().await.expect("a test database");
            let pool = || async {
                switchboard_db::open(&db.url, MIGRATIONS, 4)
                    .await
                    .expect("the database")
                    .pool
            };
            Buckets {
                first: Arc::new(PgTokenBuckets::new(pool().await)),
                second: Arc::new(PgTokenBuckets::new(pool().await)),
                _db: Some(db),
            }
        }
    }
}

fn ask(want: u32, rate: u32, burst: u32) -> TokenAsk {
    let nz = |n| NonZeroU32::new(n).expect("not zero");
    TokenAsk {
        want,
        rate: nz(rate),
        burst: nz(burst),
    }
}

async fn tokens(store: &dyn TokenBuckets, org: &str, ask: TokenAsk) -> u32 {
    store.take(org, ask).await.expect("taken").tokens
}

/// Takes until the bucket gives nothing; returns how many it gave.
async fn drain(store: &dyn TokenBuckets, org: &str, ask: TokenAsk) -> u32 {
    let mut all = 0;
    loop {
        match tokens(store, org, ask).await {
            0 => return all,
            taken => all += taken,
        }
    }
}

async fn a_new_bucket_is_full_and_gives_a_batch_then_what_is_left(of: Impl) {
    let b = buckets(of).await;
    let a = ask(2, 1, 5);
    let mut taken = Vec::new();
    for _ in 0..4 {
        taken.push(tokens(&*b.first, "org", a).await);
    }
    assert_eq!(taken, [2, 2, 1, 0]);
}

async fn an_empty_bucket_says_when_it_holds_a_token_again(of: Impl) {
    let b = buckets(of).await;
    let a = ask(5, 4, 5);
    assert_eq!(drain(&*b.first, "org", a).await, 5);
    let empty = b.first.take("org", a).await.expect("asked");
    assert_eq!(empty.tokens, 0);
    // Four a second: a token within 250 ms.
    assert!(
        empty.retry_after > Duration::ZERO && empty.retry_after <= Duration::from_millis(250),
        "{empty:?}"
    );
}

async fn a_bucket_refills_at_its_rate(of: Impl) {
    let b = buckets(of).await;
    let a = ask(5, 2, 5);
    assert_eq!(drain(&*b.first, "org", a).await, 5);
    // Two a second: one token 600 ms later, not two, not the burst.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(drain(&*b.first, "org", a).await, 1);
}

async fn a_bucket_refills_no_more_than_its_burst(of: Impl) {
    let b = buckets(of).await;
    let a = ask(2, 20, 4);
    let first = drain(&*b.first, "org", a).await;
    assert!((4..=5).contains(&first), "{first} from a full bucket");
    // Twenty a second for 400 ms would be eight: the bucket holds four.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let refilled = drain(&*b.first, "org", a).await;
    assert!(
        (4..=5).contains(&refilled),
        "{refilled} after a full refill"
    );
}

async fn a_batch_or_an_old_bucket_larger_than_the_burst_is_cut_to_it(of: Impl) {
    let b = buckets(of).await;
    assert_eq!(tokens(&*b.first, "big", ask(16, 1, 3)).await, 3);
    // A bucket of ten with nine left, its burst lowered to three.
    assert_eq!(tokens(&*b.first, "lowered", ask(1, 1, 10)).await, 1);
    assert_eq!(tokens(&*b.first, "lowered", ask(10, 1, 3)).await, 3);
    assert_eq!(tokens(&*b.first, "lowered", ask(10, 1, 3)).await, 0);
}

async fn the_buckets_of_two_organizations_are_apart(of: Impl) {
    let b = buckets(of).await;
    let a = ask(3, 1, 3);
    assert_eq!(drain(&*b.first, "org-a", a).await, 3);
    assert_eq!(tokens(&*b.first, "org-b", a).await, 3);
    assert_eq!(tokens(&*b.second, "org-a", a).await, 0);
}

async fn two_handles_taking_at_once_never_take_more_than_the_bucket_gave(of: Impl) {
    let b = buckets(of).await;
    let a = ask(1, 1, 20);
    let mut takers = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 {
            b.first.clone()
        } else {
            b.second.clone()
        };
        takers.push(tokio::spawn(async move {
            store.take("org", a).await.expect("taken").tokens
        }));
    }
    let mut taken = 0;
    for taker in takers {
        taken += taker.await.expect("the taker ends");
    }
    // The burst, and at most a token of refill while the takers ran.
    assert!((20..=21).contains(&taken), "{taken} taken of a burst of 20");
}

macro_rules! token_buckets_suite {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Impl::Memory).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Impl::Postgres).await;
                }
            )*
        }
    };
}

token_buckets_suite!(
    a_new_bucket_is_full_and_gives_a_batch_then_what_is_left,
    an_empty_bucket_says_when_it_holds_a_token_again,
    a_bucket_refills_at_its_rate,
    a_bucket_refills_no_more_than_its_burst,
    a_batch_or_an_old_bucket_larger_than_the_burst_is_cut_to_it,
    the_buckets_of_two_organizations_are_apart,
    two_handles_taking_at_once_never_take_more_than_the_bucket_gave,
);
