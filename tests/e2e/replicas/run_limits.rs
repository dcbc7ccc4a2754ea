//! Runs in flight per organization across runs-service replicas on one
//! database: a run started on one replica counts on the other.

use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::DbKind;
use tonic::Code;

use super::cluster::{cluster, until};

/// A model turn that calls the example server's `sleep` for a minute.
fn sleep_a_minute(id: &str) -> Turn {
    Turn::ToolCalls(vec![ScriptedToolCall::new(
        id,
        "example__sleep",
        r#"{"ms": 60000}"#,
    )])
}

pub(super) async fn runs_in_flight_are_counted_over_both_replicas(kind: DbKind) {
    let turns = vec![sleep_a_minute("call-1"), sleep_a_minute("call-2")];
    let c = cluster(kind, turns, 2, |config| {
        config.run_limits.max_runs_per_org = 2;
        config.run_limits.max_runs_per_user = 2;
    })
    .await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());
    let (second, third) = (
        c.another_thread(&mut a).await,
        c.another_thread(&mut a).await,
    );

    // One run in flight on each replica: each replica alone is below the
    // limit, both together are at it.
    let mut first_run = c.execute(&mut a, "one", false).await.expect("started");
    until(&mut first_run, "tool_call_started").await;
    let mut second_run = c
        .execute_on(&mut b, &second, "two", false)
        .await
        .expect("started");
    until(&mut second_run, "tool_call_started").await;

    for client in [&mut a, &mut b] {
        let refused = c
            .execute_on(client, &third, "three", false)
            .await
            .expect_err("the organization's runs in flight are at its limit");
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
        assert!(
            refused
                .message()
                .contains("your organization has 2 runs in flight, its limit"),
            "{refused:?}"
        );
    }
}
