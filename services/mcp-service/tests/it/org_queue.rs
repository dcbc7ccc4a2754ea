//! A call past its organization's concurrency limit waits its turn, within
//! what the caller can afford, instead of being refused at once.

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests};
use tonic::Code;

use crate::{
    hostile_server::execute,
    org_limits::{HangingCalls, assert_refused_at_limit, hanging_integration, hanging_upstream},
    support::{Harness, admin, create, http_integration, req, start_with},
};

/// A generous bound on waits for something that happens promptly.
const PATIENCE: Duration = Duration::from_secs(30);

async fn limited_to_two(kind: DbKind) -> Harness {
    start_with(kind, |c| {
        c.common.server.org_concurrency_limit = 2;
        c.common.server.org_queue_wait = Duration::from_secs(20);
        // The hanging calls hang until the test ends.
        c.connect_timeout = Duration::from_secs(600);
        c.call_timeout = Duration::from_secs(600);
    })
    .await
}

async fn a_call_past_the_limit_waits_for_one_to_end_and_is_served(kind: DbKind) {
    let mut h = limited_to_two(kind).await;
    let token = admin("org-a");
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let id = create(&mut h, &token, http_integration("example", &upstream.url()))
        .await
        .id;

    let slow: Vec<_> = (0..2)
        .map(|_| {
            let mut client = h.client.clone();
            let request = execute(&id, "sleep", json!({"ms": 1000}), &token);
            tokio::spawn(async move { client.execute_tool(request).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let response = tokio::time::timeout(
        PATIENCE,
        h.client
            .clone()
            .execute_tool(execute(&id, "echo", json!({"text": "third"}), &token)),
    )
    .await
    .expect("answered")
    .expect("the third call waits its turn and is served");
    assert!(!response.into_inner().is_error);
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "it waited for a slot: {:?}",
        started.elapsed()
    );
    for call in slow {
        call.await
            .expect("joined")
            .expect("the calls in flight end well");
    }
}

async fn a_call_that_cannot_be_served_within_its_deadline_is_refused_before_it(kind: DbKind) {
    let mut h = limited_to_two(kind).await;
    let token = admin("org-a");
    let (url, _upstream) = hanging_upstream().await;
    let id = hanging_integration(&mut h, &token, &url).await;
    let mut hanging = HangingCalls::new();
    hanging.start(&h.client, &id, &token, 2);
    hanging.expect_refused(0).await;

    let mut request = execute(&id, "echo", json!({"text": "x"}), &token);
    request.set_timeout(Duration::from_millis(1000));
    let started = Instant::now();
    let status = h
        .client
        .clone()
        .execute_tool(request)
        .await
        .expect_err("no slot comes free");
    let waited = started.elapsed();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_refused_at_limit(&status);
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_millis(1000),
        "waited nine tenths of the deadline, not all of it: {waited:?}"
    );
}

async fn as_many_calls_wait_as_may_run_and_more_are_refused_at_once(kind: DbKind) {
    let mut h = limited_to_two(kind).await;
    let (token, other) = (admin("org-a"), admin("org-b"));
    let (url, _upstream) = hanging_upstream().await;
    let id = hanging_integration(&mut h, &token, &url).await;
    // Two in flight, two in line: nothing comes back.
    let mut hanging = HangingCalls::new();
    hanging.start(&h.client, &id, &token, 4);
    hanging.expect_refused(0).await;

    let started = Instant::now();
    let status = h
        .client
        .clone()
        .execute_tool(execute(&id, "echo", json!({"text": "x"}), &token))
        .await
        .expect_err("the line is full");
    assert_refused_at_limit(&status);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused without waiting: {:?}",
        started.elapsed()
    );

    // Another organization has a line of its own: it is served at once.
    let started = Instant::now();
    h.client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &other))
        .await
        .expect("another organization is not behind the first one's line");
    assert!(started.elapsed() < Duration::from_secs(5));
}

db_tests!(
    a_call_past_the_limit_waits_for_one_to_end_and_is_served,
    a_call_that_cannot_be_served_within_its_deadline_is_refused_before_it,
    as_many_calls_wait_as_may_run_and_more_are_refused_at_once,
);
