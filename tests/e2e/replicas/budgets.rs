//! Monthly token budgets across runs-service replicas on one database:
//! usage a run records on one replica counts on the other, so a soft budget
//! warns and a hard budget refuses there too.

use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_runs_service::domain::usage::day_of;
use switchboard_scripted_model::Turn;
use switchboard_test_support::{DbKind, authed};
use tonic::Code;

use super::cluster::{cluster, rest};

const DAY_MILLIS: i64 = 86_400_000;

fn now_millis() -> i64 {
    switchboard_db::now_millis()
}

fn soft_budget_exceeded(events: &[runs::ExecuteRunResponse]) -> Option<runs::SoftBudgetExceeded> {
    events.iter().find_map(|e| match &e.event {
        Some(Event::SoftBudgetExceeded(passed)) => Some(*passed),
        _ => None,
    })
}

pub(super) async fn a_run_on_one_replica_counts_against_the_budgets_on_the_other(kind: DbKind) {
    let turns = vec![Turn::Text("one".into()), Turn::Text("two".into())];
    // Each model call of the scripted model uses 15 tokens: after the
    // first run both budgets are passed.
    let c = cluster(kind, turns, 2, |config| {
        config.budgets.org_monthly_token_soft_budget = 1;
        config.budgets.org_monthly_token_budget = 1;
    })
    .await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());
    let mut first = c.execute(&mut a, "first", false).await.expect("started");
    let events = rest(&mut first).await;
    assert_eq!(soft_budget_exceeded(&events), None, "{events:?}");

    let refused = c
        .execute(&mut b, "second", false)
        .await
        .expect_err("past the hard budget");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("tokens of its monthly token budget"),
        "{refused:?}"
    );

    // The usage the first replica recorded is what the second reports.
    let usage = b
        .get_usage(authed(
            runs::GetUsageRequest {
                from_day: day_of(now_millis() - DAY_MILLIS),
                to_day: day_of(now_millis() + DAY_MILLIS),
                ..Default::default()
            },
            &c.token,
        ))
        .await
        .expect("usage")
        .into_inner();
    let runs: i64 = usage.rows.iter().map(|row| row.runs).sum();
    let tokens: i64 = usage
        .rows
        .iter()
        .map(|row| row.input_tokens + row.output_tokens)
        .sum();
    assert_eq!((runs, tokens), (1, 15), "{usage:?}");
}

pub(super) async fn a_soft_budget_passed_on_one_replica_warns_on_the_other(kind: DbKind) {
    let turns = vec![Turn::Text("one".into()), Turn::Text("two".into())];
    let c = cluster(kind, turns, 2, |config| {
        config.budgets.org_monthly_token_soft_budget = 1;
    })
    .await;
    let (mut a, mut b) = (c.clients[0].clone(), c.clients[1].clone());
    let mut first = c.execute(&mut a, "first", false).await.expect("started");
    assert_eq!(soft_budget_exceeded(&rest(&mut first).await), None);
    let mut second = c.execute(&mut b, "second", false).await.expect("started");
    let events = rest(&mut second).await;
    let passed = soft_budget_exceeded(&events).expect("warned");
    assert_eq!(
        passed.used_tokens, 15,
        "the first replica's run: {passed:?}"
    );
    assert_eq!(passed.soft_budget_tokens, 1);
    assert!(
        matches!(events[1].event, Some(Event::SoftBudgetExceeded(_))),
        "right after run_started: {events:?}"
    );
    assert!(
        matches!(
            events.last().and_then(|e| e.event.as_ref()),
            Some(Event::RunCompleted(_))
        ),
        "the run goes on: {events:?}"
    );
}
