//! Toolsets' names, masks and bounds, and their writes in the audit trail.

use switchboard_proto::mcp::v1::{self as pb, audit_service_client::AuditServiceClient};
use switchboard_test_support::{DbKind, db_tests};
use tonic::Code;

use super::{member_of, setup, toolset};
use crate::support::{admin, bad_fields, member, req};

async fn names_and_masks_are_checked_and_a_taken_name_already_exists(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    for bad in ["", "Dev", "dev_tools", "a/b", &"a".repeat(64)] {
        let refused = s
            .create(&admin("org-a"), toolset(bad, vec![]))
            .await
            .expect_err("invalid name");
        assert_eq!(bad_fields(&refused), ["toolset.name"], "{bad:?}");
    }
    s.create(&admin("org-a"), toolset("dev", vec![]))
        .await
        .expect("created");
    let taken = s
        .create(&admin("org-a"), toolset("dev", vec![]))
        .await
        .expect_err("taken");
    assert_eq!(taken.code(), Code::AlreadyExists);
    assert_eq!(
        taken.message(),
        "a toolset named `dev` already exists in this organization"
    );
    let mask = s
        .update(&admin("org-a"), toolset("dev", vec![]), &["name"])
        .await
        .expect_err("the name is the key");
    assert_eq!(bad_fields(&mask), ["update_mask"]);
    let token = s
        .toolsets
        .list_toolsets(req(
            pb::ListToolsetsRequest {
                page_size: -1,
                page_token: "Not/A/Token".into(),
            },
            &admin("org-a"),
        ))
        .await
        .expect_err("invalid");
    assert_eq!(bad_fields(&token), ["page_size"]);
    let token = s
        .toolsets
        .list_toolsets(req(
            pb::ListToolsetsRequest {
                page_size: 0,
                page_token: "Not/A/Token".into(),
            },
            &admin("org-a"),
        ))
        .await
        .expect_err("invalid");
    assert_eq!(bad_fields(&token), ["page_token"]);
}

async fn every_bound_holds_at_its_limit_and_refuses_past_it(kind: DbKind) {
    let mut s = setup(kind, |config| {
        config.toolsets.max_members = 2;
        config.toolsets.max_selection = 2;
        config.toolsets.max_toolsets = 2;
    })
    .await;
    let (alpha, beta) = (s.alpha.clone(), s.beta.clone());
    s.create(
        &admin("org-a"),
        toolset(
            "full",
            vec![
                member_of(&alpha, Some(&["echo", "add"])),
                member_of(&beta, None),
            ],
        ),
    )
    .await
    .expect("at every limit");
    let too_many = s
        .create(
            &admin("org-a"),
            toolset(
                "more",
                vec![
                    member_of(&alpha, None),
                    member_of(&beta, None),
                    member_of(&alpha, None),
                ],
            ),
        )
        .await
        .expect_err("three members");
    assert_eq!(bad_fields(&too_many), ["toolset.members"]);
    let long = s
        .create(
            &admin("org-a"),
            toolset(
                "more",
                vec![member_of(&alpha, Some(&["echo", "add", "fail"]))],
            ),
        )
        .await
        .expect_err("three tools");
    assert_eq!(bad_fields(&long), ["toolset.members[0].tools"]);
    s.create(&admin("org-a"), toolset("second", vec![]))
        .await
        .expect("the second");
    let third = s
        .create(&admin("org-a"), toolset("third", vec![]))
        .await
        .expect_err("the organization holds its most");
    assert_eq!(third.code(), Code::ResourceExhausted);
    assert_eq!(
        third.message(),
        "the organization has 2 toolsets, the most it may have"
    );
    s.create(&admin("org-b"), toolset("third", vec![]))
        .await
        .expect("another organization counts its own");
}

async fn toolset_writes_and_refusals_join_the_audit_trail(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let alpha = s.alpha.clone();
    s.create(
        &admin("org-a"),
        toolset("dev", vec![member_of(&alpha, None)]),
    )
    .await
    .expect("created");
    s.update(&admin("org-a"), toolset("dev", vec![]), &["members"])
        .await
        .expect("updated");
    let _ = s
        .delete(&member("org-a"), "dev")
        .await
        .expect_err("refused");
    let long = "x".repeat(10_000);
    let _ = s
        .create(&member("org-a"), toolset(&long, vec![]))
        .await
        .expect_err("refused");
    s.delete(&admin("org-a"), "dev").await.expect("deleted");
    let mut audit = AuditServiceClient::connect(s.h.server.url())
        .await
        .expect("connects");
    let events = audit
        .list_audit_events(req(pb::ListAuditEventsRequest::default(), &admin("org-a")))
        .await
        .expect("listed")
        .into_inner()
        .events;
    let mut changes: Vec<(String, String, pb::AuditOutcome, String)> = events
        .iter()
        .filter(|e| e.action() == pb::AuditAction::ToolsetChange && e.target == "dev")
        .map(|e| {
            (
                e.subject.clone(),
                e.target.clone(),
                e.outcome(),
                e.reason.clone(),
            )
        })
        .collect();
    changes.reverse();
    assert_eq!(
        changes,
        [
            (
                "admin-user".into(),
                "dev".into(),
                pb::AuditOutcome::Ok,
                "created".into()
            ),
            (
                "admin-user".into(),
                "dev".into(),
                pb::AuditOutcome::Ok,
                "updated".into()
            ),
            (
                "member-user".into(),
                "dev".into(),
                pb::AuditOutcome::Denied,
                "managing toolsets needs the admin role".into()
            ),
            (
                "admin-user".into(),
                "dev".into(),
                pb::AuditOutcome::Ok,
                "deleted".into()
            ),
        ]
    );
    let targets: Vec<&str> = events
        .iter()
        .filter(|e| e.action() == pb::AuditAction::ToolsetChange && e.target != "dev")
        .map(|e| e.target.as_str())
        .collect();
    assert_eq!(targets, ["(invalid name)"], "not the 10,000 bytes sent");
}

db_tests!(
    names_and_masks_are_checked_and_a_taken_name_already_exists,
    every_bound_holds_at_its_limit_and_refuses_past_it,
    toolset_writes_and_refusals_join_the_audit_trail,
);
