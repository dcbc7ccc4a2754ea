//! GetUsage over gRPC: what a run used, for the organization's admins.

use switchboard_proto::runs::v1 as runs;
use switchboard_runs_service::domain::usage::day_of;
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{authed, token};
use tonic::Code;

use crate::world::{ORG, Options, final_run, world};

const DAY_MILLIS: i64 = 86_400_000;

fn now_millis() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_millis()).expect("in range")
}

fn around_today() -> runs::GetUsageRequest {
    runs::GetUsageRequest {
        from_day: day_of(now_millis() - DAY_MILLIS),
        to_day: day_of(now_millis() + DAY_MILLIS),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_run_s_tokens_tool_calls_and_itself_are_counted_for_admins() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new("c1", "example__counter", "{}")]),
            Turn::Text("done".into()),
        ],
        ..Options::default()
    })
    .await;
    final_run(&w.say("count").await);

    let usage = w
        .runs_client
        .get_usage(authed(around_today(), &w.token))
        .await
        .expect("an admin reads usage")
        .into_inner();
    let today = day_of(now_millis());
    assert_eq!(usage.rows.len(), 1, "{usage:?}");
    let row = &usage.rows[0];
    assert_eq!(row.period, today);
    // Two model calls of the scripted model's 10 tokens in and 5 out.
    assert_eq!((row.input_tokens, row.output_tokens), (20, 10));
    assert_eq!((row.tool_calls, row.runs), (1, 1));

    let by_agent = w
        .runs_client
        .get_usage(authed(
            runs::GetUsageRequest {
                group: runs::UsageGroup::Agent.into(),
                period: runs::UsagePeriod::Month.into(),
                ..around_today()
            },
            &w.token,
        ))
        .await
        .expect("by agent")
        .into_inner();
    assert_eq!(by_agent.rows.len(), 1);
    assert_eq!(by_agent.rows[0].agent_id, w.agent_id);
    assert_eq!(by_agent.rows[0].period, today[..7]);

    let member = token(ORG, "user-e2e", &[]);
    let refused = w
        .runs_client
        .get_usage(authed(around_today(), &member))
        .await
        .expect_err("members do not read usage");
    assert_eq!(refused.code(), Code::PermissionDenied);
    // 400 days apart is the most one query spans.
    let widest = w
        .runs_client
        .get_usage(authed(
            runs::GetUsageRequest {
                from_day: "2026-01-01".into(),
                to_day: "2027-02-05".into(),
                ..Default::default()
            },
            &w.token,
        ))
        .await;
    assert!(widest.is_ok(), "{widest:?}");
    for (from, to) in [
        ("2026-13-01", "2026-12-01"),
        ("2026-12-02", "2026-12-01"),
        ("2026-01-01", "2027-02-06"),
    ] {
        let bad = w
            .runs_client
            .get_usage(authed(
                runs::GetUsageRequest {
                    from_day: from.into(),
                    to_day: to.into(),
                    ..Default::default()
                },
                &w.token,
            ))
            .await
            .expect_err("refused");
        assert_eq!(bad.code(), Code::InvalidArgument, "{from}..{to}: {bad:?}");
    }
}
