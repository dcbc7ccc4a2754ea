//! The audit trail over real gRPC against the example MCP server: calls and
//! changes leave events in order, AuditService lists and verifies them, and
//! a stored event edited or removed by SQL breaks the chain where it was.

use std::time::Duration;

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_mcp_service::domain::digest::arguments_digest;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{
        self as pb, audit_service_client::AuditServiceClient, mcp_service_client::McpServiceClient,
        policy_service_client::PolicyServiceClient,
    },
};
use switchboard_test_support::{DbKind, db_tests};
use tonic::{Code, transport::Channel};

use crate::support::{Harness, admin, create, http_integration, member, req, start_with};

struct Trail {
    h: Harness,
    audit: AuditServiceClient<Channel>,
    _upstream: RunningHttpServer,
    id: String,
}

async fn setup(
    kind: DbKind,
    configure: impl FnOnce(&mut switchboard_mcp_service::Config),
) -> Trail {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start_with(kind, configure).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await
    .id;
    let audit = AuditServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    Trail {
        h,
        audit,
        _upstream: upstream,
        id,
    }
}

async fn execute(
    client: &mut McpServiceClient<Channel>,
    id: &str,
    token: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: tool.into(),
                arguments: json_to_struct(&arguments),
                ..Default::default()
            },
            token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

impl Trail {
    async fn call(&mut self, token: &str, tool: &str, arguments: serde_json::Value) {
        let _ = execute(&mut self.h.client, &self.id, token, tool, arguments).await;
    }

    async fn list(&mut self, request: pb::ListAuditEventsRequest) -> pb::ListAuditEventsResponse {
        self.audit
            .list_audit_events(req(request, &admin("org-a")))
            .await
            .expect("listed")
            .into_inner()
    }

    async fn all(&mut self) -> Vec<pb::AuditEvent> {
        self.list(pb::ListAuditEventsRequest::default())
            .await
            .events
    }

    async fn verify(&mut self) -> pb::VerifyAuditChainResponse {
        self.audit
            .verify_audit_chain(req(pb::VerifyAuditChainRequest {}, &admin("org-a")))
            .await
            .expect("verified")
            .into_inner()
    }

    async fn sql(&self, statement: &str) {
        let pool = sqlx::AnyPool::connect(&self.h.db.url)
            .await
            .expect("raw access");
        sqlx::query(statement)
            .execute(&pool)
            .await
            .expect("statement runs");
    }
}

fn summary(event: &pb::AuditEvent) -> (pb::AuditAction, pb::AuditOutcome, &str, &str) {
    (
        event.action(),
        event.outcome(),
        event.subject.as_str(),
        event.target.as_str(),
    )
}

async fn put_policy(h: &Harness, rules: Vec<pb::PolicyRule>) {
    let mut policies = PolicyServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    policies
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(pb::Policy {
                    name: "guard".into(),
                    rules,
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &admin("org-a"),
        ))
        .await
        .expect("policy written");
}

fn rule(name: &str, condition: &str, effect: pb::PolicyEffect, approver: &str) -> pb::PolicyRule {
    pb::PolicyRule {
        name: name.into(),
        condition: condition.into(),
        effect: effect.into(),
        reason: format!("{name} says so"),
        approver_role: approver.into(),
        caller_may_approve: false,
    }
}

async fn calls_leave_events_in_order_with_their_fields(kind: DbKind) {
    use pb::{AuditAction as A, AuditOutcome as O};
    let mut t = setup(kind, |_| {}).await;
    t.call(&member("org-a"), "echo", json!({"text": "hi"}))
        .await;
    t.call(&member("org-a"), "fail", json!({"message": "no"}))
        .await;
    let read =
        t.h.client
            .retrieve_resource(req(
                pb::RetrieveResourceRequest {
                    integration_id: t.id.clone(),
                    uri: "docs://readme".into(),
                    ..Default::default()
                },
                &admin("org-a"),
            ))
            .await;
    assert!(read.is_ok(), "{read:?}");
    put_policy(
        &t.h,
        vec![
            rule("no-add", "tool.name == 'add'", pb::PolicyEffect::Deny, ""),
            rule(
                "gate-sleep",
                "tool.name == 'sleep'",
                pb::PolicyEffect::RequireApproval,
                "approver",
            ),
        ],
    )
    .await;
    t.call(&member("org-a"), "add", json!({"a": 1, "b": 2}))
        .await;
    t.call(&member("org-a"), "sleep", json!({"ms": 1})).await;
    let mut events = t.all().await;
    events.reverse();
    let got: Vec<_> = events.iter().map(summary).collect();
    assert_eq!(
        got,
        vec![
            (A::IntegrationChange, O::Ok, "admin-user", "create"),
            (A::ToolCall, O::Ok, "member-user", "echo"),
            (A::ToolCall, O::Failed, "member-user", "fail"),
            (A::ResourceRead, O::Ok, "admin-user", "docs://readme"),
            (A::PolicyChange, O::Ok, "admin-user", "guard"),
            (A::ToolCall, O::Denied, "member-user", "add"),
            (A::ToolCall, O::PendingApproval, "member-user", "sleep"),
        ]
    );
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.sequence, i64::try_from(index).expect("small") + 1);
        assert_eq!(event.hash.len(), 64);
        if index > 0 {
            assert_eq!(event.previous_hash, events[index - 1].hash);
        }
    }
    assert!(events[0].previous_hash.is_empty());
    let echo = &events[1];
    assert_eq!(echo.integration_id, t.id);
    assert_eq!(echo.roles, vec!["member".to_owned()]);
    assert_eq!(
        echo.arguments_digest,
        arguments_digest(&json!({"text": "hi"}))
    );
    assert!(
        echo.arguments_json.is_empty(),
        "org-a does not record arguments"
    );
    assert!(echo.duration.is_some() && echo.time.is_some());
    assert!(!events[2].reason.is_empty(), "a failure says why");
    assert_eq!(events[5].rule, "guard@1/no-add");
    assert_eq!(events[5].reason, "no-add says so");
    assert_eq!(events[6].rule, "guard@1/gate-sleep");
    let verdict = t.verify().await;
    assert!(verdict.intact, "{verdict:?}");
    assert_eq!(verdict.events_checked, 7);
}

async fn filters_and_pages_narrow_the_listing(kind: DbKind) {
    let mut t = setup(kind, |_| {}).await;
    for _ in 0..3 {
        t.call(&member("org-a"), "echo", json!({"text": "hi"}))
            .await;
        t.call(&admin("org-a"), "fail", json!({"message": "no"}))
            .await;
    }
    let by_subject = t
        .list(pb::ListAuditEventsRequest {
            subject: "member-user".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(by_subject.events.len(), 3);
    let failed = t
        .list(pb::ListAuditEventsRequest {
            outcomes: vec![pb::AuditOutcome::Failed.into()],
            target: "fail".into(),
            integration_id: t.id.clone(),
            ..Default::default()
        })
        .await;
    assert_eq!(failed.events.len(), 3);
    assert!(failed.events.iter().all(|e| e.subject == "admin-user"));
    let future = t
        .list(pb::ListAuditEventsRequest {
            start_time: Some(prost_types::Timestamp {
                seconds: 4_000_000_000,
                nanos: 0,
            }),
            ..Default::default()
        })
        .await;
    assert!(future.events.is_empty());
    let mut sequences = Vec::new();
    let mut token = String::new();
    loop {
        let page = t
            .list(pb::ListAuditEventsRequest {
                page_size: 2,
                page_token: token,
                ..Default::default()
            })
            .await;
        assert!(page.events.len() <= 2);
        sequences.extend(page.events.iter().map(|e| e.sequence));
        token = page.next_page_token;
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(sequences, (1..=7).rev().collect::<Vec<i64>>());
    let bad = t
        .audit
        .list_audit_events(req(
            pb::ListAuditEventsRequest {
                page_size: -1,
                page_token: "not-a-token".into(),
                ..Default::default()
            },
            &admin("org-a"),
        ))
        .await
        .expect_err("invalid");
    assert_eq!(bad.code(), Code::InvalidArgument);
}

async fn editing_a_stored_event_breaks_the_chain_at_its_sequence(kind: DbKind) {
    let mut t = setup(kind, |_| {}).await;
    for _ in 0..4 {
        t.call(&member("org-a"), "echo", json!({"text": "hi"}))
            .await;
    }
    assert!(t.verify().await.intact);
    t.sql("UPDATE audit_events SET subject = 'someone-else' WHERE sequence = 3")
        .await;
    let verdict = t.verify().await;
    assert!(!verdict.intact);
    assert_eq!(verdict.first_broken_sequence, 3, "{verdict:?}");
    assert!(verdict.problem.contains("hash"), "{verdict:?}");
}

async fn deleting_a_stored_event_breaks_the_chain_at_its_sequence(kind: DbKind) {
    let mut t = setup(kind, |_| {}).await;
    for _ in 0..4 {
        t.call(&member("org-a"), "echo", json!({"text": "hi"}))
            .await;
    }
    t.all().await;
    t.sql("DELETE FROM audit_events WHERE sequence = 2").await;
    let verdict = t.verify().await;
    assert!(!verdict.intact);
    assert_eq!(verdict.first_broken_sequence, 2, "{verdict:?}");
    t.sql("DELETE FROM audit_events WHERE sequence >= 2").await;
    let verdict = t.verify().await;
    assert_eq!(
        verdict.first_broken_sequence, 2,
        "removing the newest: {verdict:?}"
    );
}

async fn two_replicas_appending_for_one_org_keep_one_chain(kind: DbKind) {
    let t = setup(kind, |_| {}).await;
    let config = switchboard_mcp_service::Config::for_tests(
        &t.h.db.url,
        switchboard_test_support::TEST_JWT_SECRET,
    );
    let second = switchboard_mcp_service::spawn(config)
        .await
        .expect("a second replica starts");
    let mut tasks = Vec::new();
    for url in [t.h.server.url(), second.url()] {
        for _ in 0..10 {
            let url = url.clone();
            let id = t.id.clone();
            tasks.push(tokio::spawn(async move {
                let mut client = McpServiceClient::connect(url).await.expect("connects");
                for _ in 0..3 {
                    execute(
                        &mut client,
                        &id,
                        &member("org-a"),
                        "echo",
                        json!({"text": "x"}),
                    )
                    .await
                    .expect("called");
                }
            }));
        }
    }
    for task in tasks {
        task.await.expect("caller finished");
    }
    // Each replica's writer stores what it queued when read through it.
    let mut other = AuditServiceClient::connect(second.url())
        .await
        .expect("connects");
    let other_verdict = other
        .verify_audit_chain(req(pb::VerifyAuditChainRequest {}, &admin("org-a")))
        .await
        .expect("verified")
        .into_inner();
    assert!(other_verdict.intact, "{other_verdict:?}");
    let mut t = t;
    let verdict = t.verify().await;
    assert!(verdict.intact, "{verdict:?}");
    assert_eq!(verdict.events_checked, 1 + 2 * 10 * 3);
}

async fn verifying_while_another_replica_records_calls_finds_no_break(kind: DbKind) {
    let mut t = setup(kind, |_| {}).await;
    let config = switchboard_mcp_service::Config::for_tests(
        &t.h.db.url,
        switchboard_test_support::TEST_JWT_SECRET,
    );
    let second = switchboard_mcp_service::spawn(config)
        .await
        .expect("a second replica starts");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut callers = Vec::new();
    for _ in 0..4 {
        let (url, id, stop) = (second.url(), t.id.clone(), stop.clone());
        callers.push(tokio::spawn(async move {
            let mut client = McpServiceClient::connect(url).await.expect("connects");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                execute(&mut client, &id, &member("org-a"), "echo", json!({}))
                    .await
                    .expect("called");
            }
        }));
    }
    let mut verdicts = Vec::new();
    for _ in 0..30 {
        verdicts.push(t.verify().await);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for caller in callers {
        caller.await.expect("caller finished");
    }
    let broken: Vec<_> = verdicts.iter().filter(|v| !v.intact).collect();
    assert!(broken.is_empty(), "{broken:?}");
    let checked: Vec<i64> = verdicts.iter().map(|v| v.events_checked).collect();
    assert!(
        checked.first() < checked.last(),
        "calls were recorded meanwhile: {checked:?}"
    );
}

async fn retention_removes_old_events_and_the_chain_still_verifies(kind: DbKind) {
    let mut t = setup(kind, |config| {
        config.audit.retention = Duration::from_millis(400);
        config.audit.purge_interval = Duration::from_millis(50);
        config.audit.purge_batch = 2;
    })
    .await;
    for _ in 0..4 {
        t.call(&member("org-a"), "echo", json!({"text": "old"}))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    t.call(&member("org-a"), "echo", json!({"text": "new"}))
        .await;
    let events = t.all().await;
    assert_eq!(events.len(), 1, "only the new event is kept: {events:?}");
    assert_eq!(events[0].sequence, 6);
    let verdict = t.verify().await;
    assert!(verdict.intact, "{verdict:?}");
    assert_eq!(verdict.events_checked, 1);
}

async fn a_member_cannot_read_the_trail(kind: DbKind) {
    let mut t = setup(kind, |_| {}).await;
    let listed = t
        .audit
        .list_audit_events(req(pb::ListAuditEventsRequest::default(), &member("org-a")))
        .await
        .expect_err("members may not list");
    assert_eq!(listed.code(), Code::PermissionDenied);
    let verified = t
        .audit
        .verify_audit_chain(req(pb::VerifyAuditChainRequest {}, &member("org-a")))
        .await
        .expect_err("members may not verify");
    assert_eq!(verified.code(), Code::PermissionDenied);
}

async fn arguments_are_recorded_only_for_opted_in_orgs(kind: DbKind) {
    let mut t = setup(kind, |config| {
        config.audit.record_arguments_orgs = "org-b, org-a".into();
        config.audit.max_arguments_bytes = 32;
    })
    .await;
    // `{"text":"…"}` is 11 bytes around the text: 32 bytes is the limit.
    t.call(&member("org-a"), "echo", json!({"text": "x".repeat(21)}))
        .await;
    t.call(&member("org-a"), "echo", json!({"text": "x".repeat(22)}))
        .await;
    let events = t.all().await;
    assert_eq!(
        events[1].arguments_json,
        format!(r#"{{"text":"{}"}}"#, "x".repeat(21))
    );
    assert!(
        events[0]
            .arguments_json
            .starts_with("(not recorded: 33 bytes"),
        "{events:?}"
    );
    assert_eq!(
        events[0].arguments_digest,
        arguments_digest(&json!({"text": "x".repeat(22)}))
    );
    let mut other = setup(kind, |config| {
        config.audit.record_arguments_orgs = "org-b".into();
    })
    .await;
    other
        .call(&member("org-a"), "echo", json!({"text": "hi"}))
        .await;
    let events = other.all().await;
    assert!(events[0].arguments_json.is_empty());
    assert!(!events[0].arguments_digest.is_empty());
}

/// The trail never holds what the guardrails find: a call whose secret the
/// settings let leave (flagged) is recorded with it redacted, and its
/// digest taken of the redacted arguments.
async fn recorded_arguments_hold_no_finding_whatever_the_actions(kind: DbKind) {
    const GITHUB: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let mut t = setup(kind, |config| {
        config.audit.record_arguments_orgs = "org-a".into();
        config.guardrails.arguments = "github_token=flag".into();
    })
    .await;
    let text = format!("token {GITHUB} for ann@example.com");
    t.call(&member("org-a"), "echo", json!({ "text": text }))
        .await;
    let events = t.all().await;
    let redacted = json!({ "text": "token [redacted github_token] for [redacted email]" });
    assert_eq!(events[0].arguments_json, redacted.to_string(), "{events:?}");
    assert_eq!(events[0].arguments_digest, arguments_digest(&redacted));
    assert!(!format!("{events:?}").contains(GITHUB));
}

async fn integration_and_policy_changes_are_recorded_with_how_they_ended(kind: DbKind) {
    use pb::{AuditAction as A, AuditOutcome as O};
    let mut t = setup(kind, |_| {}).await;
    let refused =
        t.h.client
            .create_integration(req(
                http_integration("other", "http://127.0.0.1:1/mcp"),
                &member("org-a"),
            ))
            .await
            .expect_err("members may not create");
    assert_eq!(refused.code(), Code::PermissionDenied);
    t.h.client
        .disable_integration(req(
            pb::DisableIntegrationRequest { id: t.id.clone() },
            &admin("org-a"),
        ))
        .await
        .expect("disabled");
    put_policy(&t.h, vec![rule("r", "true", pb::PolicyEffect::Allow, "")]).await;
    PolicyServiceClient::connect(t.h.server.url())
        .await
        .expect("connects")
        .delete_policy(req(
            pb::DeletePolicyRequest {
                name: "guard".into(),
                expected_version: 1,
            },
            &admin("org-a"),
        ))
        .await
        .expect("deleted");
    let mut events = t.all().await;
    events.reverse();
    let got: Vec<_> = events.iter().map(summary).collect();
    assert_eq!(
        got,
        vec![
            (A::IntegrationChange, O::Ok, "admin-user", "create"),
            (A::IntegrationChange, O::Denied, "member-user", "create"),
            (A::IntegrationChange, O::Ok, "admin-user", "disable"),
            (A::PolicyChange, O::Ok, "admin-user", "guard"),
            (A::PolicyChange, O::Ok, "admin-user", "guard"),
        ]
    );
    assert_eq!(events[0].integration_id, t.id);
    assert_eq!(events[2].integration_id, t.id);
    assert!(!events[1].reason.is_empty());
    assert_eq!(events[3].reason, "wrote version 1");
    assert_eq!(events[4].reason, "deleted after version 1");
}

/// The writer's connection is cut while its append waits for the chain's
/// lock: nothing was written, so the writer appends the same events again
/// on a new connection and the trail has no gap.
#[tokio::test]
async fn an_append_cut_off_before_writing_is_made_again() {
    let mut t = setup(DbKind::Postgres, |_| {}).await;
    // The creation's event is stored, so the chain's row exists to lock.
    assert_eq!(t.verify().await.events_checked, 1);
    let pool = sqlx::AnyPool::connect(&t.h.db.url)
        .await
        .expect("raw access");
    let mut holder = pool.begin().await.expect("a transaction");
    sqlx::query("SELECT 1 FROM audit_chains WHERE org_id = 'org-a' FOR UPDATE")
        .execute(&mut *holder)
        .await
        .expect("the chain locked");
    t.call(&member("org-a"), "echo", json!({"text": "kept"}))
        .await;
    let cut = cut_the_waiting_append(&pool).await;
    assert_eq!(cut, 1, "one append waited for the chain");
    // The writer pauses, reconnects and waits for the lock again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.rollback().await.expect("the lock given back");
    let verdict = t.verify().await;
    assert!(verdict.intact, "{verdict:?}");
    assert_eq!(verdict.events_checked, 2, "the creation and the call");
    let events = t.all().await;
    assert_eq!(events[0].action(), pb::AuditAction::ToolCall);
}

/// Ends the backend of the append that waits for a lock on `audit_chains`
/// once there is one; how many were ended.
async fn cut_the_waiting_append(pool: &sqlx::AnyPool) -> i64 {
    use sqlx::Row as _;
    for _ in 0..200 {
        let ended: i64 = sqlx::query(
            "SELECT COUNT(pg_terminate_backend(pid))::BIGINT FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock' \
             AND query LIKE '%audit_chains%'",
        )
        .fetch_one(pool)
        .await
        .expect("backends listed")
        .get(0);
        if ended > 0 {
            return ended;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    0
}

db_tests!(
    calls_leave_events_in_order_with_their_fields,
    filters_and_pages_narrow_the_listing,
    editing_a_stored_event_breaks_the_chain_at_its_sequence,
    deleting_a_stored_event_breaks_the_chain_at_its_sequence,
    two_replicas_appending_for_one_org_keep_one_chain,
    verifying_while_another_replica_records_calls_finds_no_break,
    retention_removes_old_events_and_the_chain_still_verifies,
    a_member_cannot_read_the_trail,
    arguments_are_recorded_only_for_opted_in_orgs,
    recorded_arguments_hold_no_finding_whatever_the_actions,
    integration_and_policy_changes_are_recorded_with_how_they_ended,
);
