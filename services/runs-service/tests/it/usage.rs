//! The usage ledger, held to the same rules by every repository (SQLite,
//! PostgreSQL and the in-memory fake): what runs used adds up per day,
//! agent and user, within the organization, and outlives the thread.

use chrono::NaiveDate;
use switchboard_runs_service::domain::{
    entities::{Part, Role, RunStatus, Usage},
    ids::AgentId,
    ports::RunsRepository,
    usage::{UsageGroup, UsagePeriod, UsageQuery, UsageRow},
};
use switchboard_test_support::{Store, store_tests};

use crate::{
    repository::{message, run, thread},
    stores::runs_repository as repository,
};

/// 2026-11-25T12:00:00Z and the next day, in Unix milliseconds.
const NOV_25: i64 = 1_795_608_000_000;
const NOV_26: i64 = NOV_25 + 86_400_000;

fn query(group: UsageGroup) -> UsageQuery {
    UsageQuery {
        org_id: "org-a".into(),
        from: NaiveDate::from_ymd_opt(2026, 11, 1).expect("a day"),
        to: NaiveDate::from_ymd_opt(2026, 11, 30).expect("a day"),
        group,
        period: UsagePeriod::Day,
    }
}

fn tool_result(call: &str) -> Vec<Part> {
    vec![Part::ToolResult {
        tool_call_id: call.into(),
        name: "example__counter".into(),
        content: "1".into(),
        is_error: false,
    }]
}

/// A run of `user` with `agent` in `org` that used `tokens` in and out over
/// two steps and answered one tool call, written as the run loop writes.
async fn used(repo: &dyn RunsRepository, org: &str, user: &str, agent: AgentId, at: i64) {
    let t = thread(org, user, agent, at);
    repo.insert_thread(&t).await.expect("thread");
    let mut r = run(&t, at);
    repo.start_run_with(
        &r,
        &[message(t.id, Role::User, crate::repository::text("hi"), at)],
    )
    .await
    .expect("started");
    r.steps = 1;
    r.usage = Usage {
        input_tokens: 100,
        output_tokens: 10,
    };
    repo.update_run_with(&r, &[message(t.id, Role::Tool, tool_result("c1"), at)])
        .await
        .expect("first step");
    r.steps = 2;
    r.usage = Usage {
        input_tokens: 250,
        output_tokens: 30,
    };
    r.status = RunStatus::Completed;
    repo.update_run(&r).await.expect("ended");
}

async fn runs_add_up_per_day_agent_and_user_and_outlive_their_thread(store: Store) {
    let (_db, repo) = repository(store).await;
    let (a1, a2) = (AgentId::new(), AgentId::new());
    used(&*repo, "org-a", "alice", a1, NOV_25).await;
    used(&*repo, "org-a", "bob", a1, NOV_25).await;
    used(&*repo, "org-a", "alice", a2, NOV_26).await;
    used(&*repo, "org-b", "mallory", a1, NOV_25).await;

    let day = |period: &str, agent: String, user: &str, runs: i64| UsageRow {
        period: period.into(),
        agent_id: agent,
        user_id: user.into(),
        input_tokens: 250 * runs,
        output_tokens: 30 * runs,
        tool_calls: runs,
        runs,
    };
    assert_eq!(
        repo.usage(&query(UsageGroup::Organization))
            .await
            .expect("usage"),
        [
            day("2026-11-25", String::new(), "", 2),
            day("2026-11-26", String::new(), "", 1)
        ],
        "org-b's usage is its own"
    );
    let mut by_agent = vec![
        day("2026-11-25", a1.to_string(), "", 2),
        day("2026-11-26", a2.to_string(), "", 1),
    ];
    by_agent.sort_by(|x, y| (&x.period, &x.agent_id).cmp(&(&y.period, &y.agent_id)));
    assert_eq!(
        repo.usage(&query(UsageGroup::Agent)).await.expect("usage"),
        by_agent
    );
    assert_eq!(
        repo.usage(&query(UsageGroup::User)).await.expect("usage"),
        [
            day("2026-11-25", String::new(), "alice", 1),
            day("2026-11-25", String::new(), "bob", 1),
            day("2026-11-26", String::new(), "alice", 1)
        ]
    );
    let only_the_26th = UsageQuery {
        from: NaiveDate::from_ymd_opt(2026, 11, 26).expect("a day"),
        ..query(UsageGroup::Organization)
    };
    assert_eq!(
        repo.usage(&only_the_26th).await.expect("usage"),
        [day("2026-11-26", String::new(), "", 1)]
    );

    // Deleting every thread keeps what they used.
    let before = repo
        .usage(&query(UsageGroup::Organization))
        .await
        .expect("usage");
    for user in ["alice", "bob"] {
        let threads = repo
            .list_threads("org-a", user, None, None, 100)
            .await
            .expect("threads");
        for t in threads {
            repo.delete_thread("org-a", user, t.id)
                .await
                .expect("deleted");
        }
    }
    assert_eq!(
        repo.usage(&query(UsageGroup::Organization))
            .await
            .expect("usage"),
        before
    );
}

/// Runs started, stepped and ended by many callers at once are each
/// written (none refused because another held the database) and add up.
async fn runs_written_by_many_callers_at_once_all_add_up(store: Store) {
    const RUNS: i64 = 40;
    let (_db, repo) = repository(store).await;
    let repo: std::sync::Arc<dyn RunsRepository> = repo.into();
    let agent = AgentId::new();
    let writers = (0..RUNS).map(|i| {
        let repo = repo.clone();
        tokio::spawn(async move {
            used(&*repo, "org-a", &format!("user-{i}"), agent, NOV_25).await;
        })
    });
    for writer in futures::future::join_all(writers).await {
        writer.expect("every run written");
    }
    let total = repo
        .usage(&query(UsageGroup::Organization))
        .await
        .expect("usage");
    assert_eq!(total.len(), 1, "{total:?}");
    assert_eq!(total[0].runs, RUNS);
    assert_eq!(total[0].input_tokens, 250 * RUNS);
}

/// A write whose totals did not grow (a save past midnight with nothing
/// new, or one replayed out of order with smaller totals) adds nothing:
/// no tokens, and no empty row for its day.
async fn writes_that_use_nothing_add_nothing(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = thread("org-a", "alice", AgentId::new(), NOV_25);
    repo.insert_thread(&t).await.expect("thread");
    let mut r = run(&t, NOV_25);
    repo.start_run_with(&r, &[]).await.expect("started");
    r.usage = Usage {
        input_tokens: 100,
        output_tokens: 10,
    };
    repo.update_run(&r).await.expect("a step");
    // The next day: totals that did not grow, then smaller ones.
    r.updated_at = NOV_26;
    repo.update_run(&r).await.expect("saved again");
    r.usage.input_tokens = 90;
    repo.update_run(&r).await.expect("replayed");
    assert_eq!(
        repo.usage(&query(UsageGroup::Organization))
            .await
            .expect("usage"),
        [UsageRow {
            period: "2026-11-25".into(),
            agent_id: String::new(),
            user_id: String::new(),
            input_tokens: 100,
            output_tokens: 10,
            tool_calls: 0,
            runs: 1,
        }]
    );
}

store_tests!(
    every_store: [
        runs_add_up_per_day_agent_and_user_and_outlive_their_thread,
        runs_written_by_many_callers_at_once_all_add_up,
        writes_that_use_nothing_add_nothing,
    ],
    databases_only: [],
);
