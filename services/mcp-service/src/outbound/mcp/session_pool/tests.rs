//! Unit tests of `session_pool`.

use super::*;

const LIMITS: PoolLimits = PoolLimits {
    max_sessions: 4,
    max_sessions_per_org: 3,
    max_stdio_sessions_per_org: 1,
    idle_timeout: Duration::from_secs(60),
};

fn key(org: &str, scope: &str, stdio: bool) -> SessionKey {
    SessionKey {
        org: OrgId(org.to_owned()),
        stdio,
        integration: IntegrationId::new(),
        version: 0,
        scope: SessionScope::new("user", scope),
    }
}

/// Admits and inserts `key`; the slot it got.
fn open(slots: &mut Slots, key: &SessionKey) -> Result<Arc<Slot>, CallError> {
    slots.admit(&key.org, key.stdio, &LIMITS)?;
    let slot = Arc::new(Slot::default());
    slots.update(&key.org, |org| org.insert(key.clone(), slot.clone()));
    Ok(slot)
}

fn holds(slots: &Slots, key: &SessionKey) -> bool {
    slots
        .orgs
        .get(&key.org)
        .is_some_and(|org| org.sessions.contains_key(key))
}

#[test]
fn a_full_pool_closes_an_idle_session_of_the_largest_organization() {
    let mut slots = Slots::default();
    let small = key("small", "s", false);
    open(&mut slots, &small).expect("room");
    let big: Vec<_> = (0..3).map(|i| key("big", &i.to_string(), false)).collect();
    for key in &big {
        open(&mut slots, key).expect("room");
    }
    assert_eq!(slots.total, 4);
    open(&mut slots, &key("new", "n", false)).expect("room made");
    assert!(
        holds(&slots, &small),
        "the small organization kept its session"
    );
    assert!(!holds(&slots, &big[0]), "the largest one's oldest closed");
    assert_eq!(slots.total, 4);
    assert_eq!(slots.by_count.len(), 3);
}

#[test]
fn sessions_in_use_are_never_closed_to_make_room() {
    let mut slots = Slots::default();
    let held: Vec<_> = (0..3)
        .map(|i| {
            let key = key("org", &i.to_string(), false);
            open(&mut slots, &key).expect("room")
        })
        .collect();
    let refused = open(&mut slots, &key("org", "more", false)).expect_err("all busy");
    assert!(matches!(refused, CallError::Exhausted { .. }), "{refused}");
    drop(held);
    open(&mut slots, &key("org", "more", false)).expect("an idle one closed");
    assert_eq!(slots.total, 3);
}

#[test]
fn stdio_sessions_have_their_own_smaller_limit() {
    let mut slots = Slots::default();
    let first = key("org", "a", true);
    let busy = open(&mut slots, &first).expect("room");
    open(&mut slots, &key("org", "plain", false)).expect("not stdio");
    let refused = open(&mut slots, &key("org", "b", true)).expect_err("one process");
    assert!(refused.to_string().contains("stdio"), "{refused}");
    drop(busy);
    open(&mut slots, &key("org", "b", true)).expect("the idle process closed");
    assert!(!holds(&slots, &first));
    assert_eq!(slots.orgs[&OrgId("org".into())].stdio, 1);
}

#[test]
fn idle_sessions_close_from_the_least_recently_used_end() {
    let inner = PoolInner {
        slots: Mutex::default(),
        limits: PoolLimits {
            idle_timeout: Duration::ZERO,
            ..LIMITS
        },
        epoch: Instant::now() - Duration::from_secs(10),
    };
    let (old, fresh) = (key("org", "old", false), key("org", "fresh", false));
    {
        let mut slots = inner.slots();
        open(&mut slots, &old).expect("room");
        let slot = open(&mut slots, &fresh).expect("room");
        slot.last_used.store(u64::MAX, Ordering::Relaxed);
    }
    inner.close_idle();
    let slots = inner.slots();
    assert!(!holds(&slots, &old) && holds(&slots, &fresh));
    assert_eq!(slots.total, 1);
}
