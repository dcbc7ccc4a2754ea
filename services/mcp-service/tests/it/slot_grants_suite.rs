//! The [`SlotGrants`] suite: every store of the grants of calls in flight
//! keeps the rules `switchboard_server::org_limits::grants` states, the one
//! in memory and the one in PostgreSQL alike.

use std::{sync::Arc, time::Duration};

use switchboard_mcp_service::outbound::storage::sql::MIGRATIONS;
use switchboard_server::{Ask, MemorySlotGrants, PgSlotGrants, SlotGrants};
use switchboard_test_support::TestDb;

/// How long a grant lives unless renewed.
const TTL: Duration = Duration::from_millis(600);

/// Which store a case runs on.
#[derive(Debug, Clone, Copy)]
enum Impl {
    Memory,
    Postgres,
}

/// Two handles on one store: the same grants in memory, two pools on one
/// database, as two replicas hold them.
struct Grants {
    first: Arc<dyn SlotGrants>,
    second: Arc<dyn SlotGrants>,
    _db: Option<TestDb>,
}

async fn grants(of: Impl) -> Grants {
    match of {
        Impl::Memory => {
            let shared = Arc::new(MemorySlotGrants::new(TTL));
            Grants {
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
            Grants {
                first: Arc::new(PgSlotGrants::new(pool().await, TTL)),
                second: Arc::new(PgSlotGrants::new(pool().await, TTL)),
                _db: Some(db),
            }
        }
    }
}

/// What `replica` is granted of `org` (limit `limit`) keeping `keep` and
/// asking for `want` more.
async fn take(store: &dyn SlotGrants, replica: &str, org: &str, keep: usize, want: usize) -> usize {
    let limit = 3;
    store
        .acquire(replica, org, Ask { keep, want, limit })
        .await
        .expect("asked")
}

async fn far_from_the_limit_a_whole_batch_is_granted(of: Impl) {
    let g = grants(of).await;
    let ask = |keep| Ask {
        keep,
        want: 4,
        limit: 100,
    };
    assert_eq!(g.first.acquire("a", "org", ask(0)).await.expect("ok"), 4);
    assert_eq!(g.first.acquire("a", "org", ask(4)).await.expect("ok"), 8);
    assert_eq!(g.second.acquire("b", "org", ask(0)).await.expect("ok"), 4);
}

async fn near_the_limit_one_slot_at_a_time_and_never_past_it(of: Impl) {
    let g = grants(of).await;
    assert_eq!(take(&*g.first, "a", "org", 0, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org", 1, 1).await, 2);
    assert_eq!(take(&*g.second, "b", "org", 0, 1).await, 1);
    // Full: b keeps its one, a is granted none more.
    assert_eq!(take(&*g.second, "b", "org", 1, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org", 2, 1).await, 2);
    assert_eq!(take(&*g.first, "c", "org", 0, 1).await, 0);
}

async fn the_grants_of_two_organizations_are_apart(of: Impl) {
    let g = grants(of).await;
    assert_eq!(take(&*g.first, "a", "org-a", 0, 3).await, 1);
    assert_eq!(take(&*g.first, "a", "org-a", 1, 1).await, 2);
    assert_eq!(take(&*g.first, "a", "org-a", 2, 1).await, 3);
    assert_eq!(take(&*g.second, "b", "org-b", 0, 1).await, 1);
    assert_eq!(take(&*g.second, "b", "org-a", 0, 1).await, 0);
}

async fn a_shrunk_grant_gives_its_slots_to_the_others(of: Impl) {
    let g = grants(of).await;
    assert_eq!(take(&*g.first, "a", "org", 0, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org", 1, 1).await, 2);
    assert_eq!(take(&*g.first, "a", "org", 2, 1).await, 3);
    assert!(g.first.shrink("a", "org", 1).await.expect("shrunk"));
    assert_eq!(take(&*g.second, "b", "org", 0, 1).await, 1);
    assert_eq!(take(&*g.second, "b", "org", 1, 1).await, 2);
    // Down to nothing: given up, and gone.
    assert!(g.first.shrink("a", "org", 0).await.expect("given up"));
    assert!(!g.first.shrink("a", "org", 1).await.expect("gone"));
    assert_eq!(take(&*g.second, "b", "org", 2, 1).await, 3);
}

async fn a_grant_not_renewed_expires_and_its_slots_come_back(of: Impl) {
    let g = grants(of).await;
    assert_eq!(take(&*g.first, "a", "org", 0, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org", 1, 1).await, 2);
    assert_eq!(take(&*g.second, "b", "org", 0, 1).await, 1);
    tokio::time::sleep(TTL * 5 / 4).await;
    // Both lapsed: b is granted what it keeps and the rest, a nothing back.
    assert_eq!(take(&*g.second, "b", "org", 1, 1).await, 2);
    assert_eq!(take(&*g.second, "b", "org", 2, 1).await, 3);
    assert!(!g.first.shrink("a", "org", 1).await.expect("gone"));
    assert!(g.first.renew("a").await.expect("renewed").is_empty());
}

async fn renewing_keeps_every_grant_of_a_replica_alive(of: Impl) {
    let g = grants(of).await;
    assert_eq!(take(&*g.first, "a", "org-a", 0, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org-b", 0, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org-b", 1, 1).await, 2);
    for _ in 0..2 {
        tokio::time::sleep(TTL * 5 / 8).await;
        let mut renewed = g.first.renew("a").await.expect("renewed");
        renewed.sort();
        assert_eq!(renewed, ["org-a", "org-b"]);
    }
    // Past the time-to-live since the grant, still a's.
    assert_eq!(take(&*g.second, "b", "org-b", 0, 1).await, 1);
    assert_eq!(take(&*g.second, "b", "org-b", 1, 1).await, 1);
}

async fn release_gives_up_every_grant_of_a_replica_at_once(of: Impl) {
    let g = grants(of).await;
    assert_eq!(take(&*g.first, "a", "org-a", 0, 1).await, 1);
    assert_eq!(take(&*g.first, "a", "org-a", 1, 1).await, 2);
    assert_eq!(take(&*g.first, "a", "org-b", 0, 1).await, 1);
    assert_eq!(take(&*g.second, "b", "org-a", 0, 1).await, 1);
    g.first.release("a").await.expect("released");
    assert_eq!(take(&*g.second, "c", "org-a", 0, 1).await, 1);
    assert_eq!(take(&*g.second, "c", "org-a", 1, 1).await, 2);
    assert!(g.first.renew("a").await.expect("renewed").is_empty());
    // b's grant stays.
    assert_eq!(g.second.renew("b").await.expect("renewed"), ["org-a"]);
}

async fn replicas_asking_at_once_are_never_granted_past_the_limit(of: Impl) {
    let g = grants(of).await;
    let mut askers = Vec::new();
    for i in 0..12 {
        let store = if i % 2 == 0 {
            g.first.clone()
        } else {
            g.second.clone()
        };
        askers.push(tokio::spawn(async move {
            let ask = Ask {
                keep: 0,
                want: 1,
                limit: 5,
            };
            store
                .acquire(&format!("r{i}"), "org", ask)
                .await
                .expect("asked")
        }));
    }
    let mut granted = 0;
    for asker in askers {
        granted += asker.await.expect("the asker ends");
    }
    assert_eq!(granted, 5);
}

macro_rules! slot_grants_suite {
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

slot_grants_suite!(
    far_from_the_limit_a_whole_batch_is_granted,
    near_the_limit_one_slot_at_a_time_and_never_past_it,
    the_grants_of_two_organizations_are_apart,
    a_shrunk_grant_gives_its_slots_to_the_others,
    a_grant_not_renewed_expires_and_its_slots_come_back,
    renewing_keeps_every_grant_of_a_replica_alive,
    release_gives_up_every_grant_of_a_replica_at_once,
    replicas_asking_at_once_are_never_granted_past_the_limit,
);
