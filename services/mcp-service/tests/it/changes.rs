//! Change notifications from a server of 2026-07-28: it has no session to
//! send them on, so mcp-service listens for them (`subscriptions/listen`)
//! and drops the cached discovery when a list changes.

use std::time::{Duration, Instant};

use switchboard_example_mcp_server::{EXTRA_TOOL, HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests};

use crate::support::{Harness, admin, create, http_integration, req, start};

async fn tool_names(h: &Harness, token: &str, id: &str) -> Vec<String> {
    h.client
        .clone()
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.to_owned(),
                bypass_cache: false,
                allowed_tools: None,
            },
            token,
        ))
        .await
        .expect("discovered")
        .into_inner()
        .tools
        .into_iter()
        .map(|tool| tool.name)
        .collect()
}

async fn a_stateless_servers_list_change_drops_the_cached_discovery(kind: DbKind) {
    let upstream = spawn_http(HttpServerOptions {
        stateful: false,
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start(kind).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;
    let before = tool_names(&h, &token, &id).await;
    assert!(!before.iter().any(|name| name == EXTRA_TOOL));

    // The stream opens after the first discovery; the change is made once
    // the server holds it (bounded wait, not a measurement).
    let deadline = Instant::now() + Duration::from_secs(10);
    while upstream.listening().await == 0 {
        assert!(Instant::now() < deadline, "mcp-service never listened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        tool_names(&h, &token, &id).await,
        before,
        "served from the cache while nothing changed"
    );
    let calls_before = upstream.stats.snapshot().tool_calls;

    // Changed by the server on its own, not through any call of ours: only
    // the listen stream can tell.
    assert!(upstream.add_extra_tool().await);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tool_names(&h, &token, &id)
        .await
        .iter()
        .any(|name| name == EXTRA_TOOL)
    {
        assert!(Instant::now() < deadline, "the cache was never invalidated");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstream.stats.snapshot().tool_calls, calls_before);
}

db_tests!(a_stateless_servers_list_change_drops_the_cached_discovery);
