use rmcp::model::{ServerJsonRpcMessage, ServerNotification, ToolListChangedNotification};

use super::{CACHE, Hub, SHADOWS, index};

fn changed() -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::notification(ServerNotification::ToolListChangedNotification(
        ToolListChangedNotification::default(),
    ))
}

#[test]
fn a_reconnecting_client_is_given_what_came_after_its_last_event_within_the_cache() {
    let mut hub = Hub::default();
    let first = hub.open(None);
    drop(first);
    for _ in 0..CACHE + 4 {
        hub.give(changed());
    }
    assert_eq!(hub.cache.len(), CACHE, "the cache keeps the last {CACHE}");

    let mut again = hub.open(Some(10));
    let mut replayed = Vec::new();
    while let Ok(event) = again.try_recv() {
        replayed.push(index(&event));
    }
    assert_eq!(replayed, (11..=20).collect::<Vec<u64>>());

    hub.give(changed());
    assert_eq!(
        again.try_recv().map(|e| index(&e)).ok(),
        Some(21),
        "live again"
    );
}

#[test]
fn streams_opened_beside_a_live_one_are_kept_alive_and_bounded() {
    let mut hub = Hub::default();
    let mut live = hub.open(None);
    let mut shadows: Vec<_> = (0..SHADOWS + 3).map(|_| hub.open(None)).collect();
    assert_eq!(hub.shadows.len(), SHADOWS, "at most {SHADOWS} beside it");

    hub.give(changed());
    assert_eq!(live.try_recv().map(|e| index(&e)).ok(), Some(1));
    for shadow in &mut shadows {
        assert!(
            shadow.try_recv().is_err(),
            "only the live stream is given messages"
        );
    }
    let ended = shadows
        .iter_mut()
        .filter(|shadow| shadow.is_closed())
        .count();
    assert_eq!(ended, 3, "the oldest ones beyond the bound end");
}

#[test]
fn a_slow_clients_stream_is_bounded_and_a_reconnect_replays_the_last_ones() {
    let mut hub = Hub::default();
    let live = hub.open(None);
    for _ in 0..CACHE * 3 {
        hub.give(changed());
    }
    assert_eq!(
        live.len(),
        live.max_capacity(),
        "its buffer is full, not more"
    );
    drop(live);
    let mut again = hub.open(Some(u64::try_from(CACHE * 2).expect("small")));
    assert_eq!(again.len(), CACHE, "the last {CACHE} are given again");
    assert_eq!(
        again.try_recv().map(|e| index(&e)).ok(),
        Some(u64::try_from(CACHE * 2 + 1).expect("small"))
    );
}
