//! `switchboard audit`: the trail listed with filters, and its chain
//! verified.

use crate::world::World;

#[tokio::test]
async fn the_trail_is_listed_filtered_and_verified() {
    let world = World::start(Vec::new()).await;
    world.agent(&[]).await;
    let listed = world.ok(&["audit", "list"]).await;
    assert!(listed.contains("integration_change"), "{listed}");
    assert!(listed.contains("user-cli"), "{listed}");
    let created = world
        .json(&[
            "audit",
            "list",
            "--integration",
            "example",
            "--outcome",
            "ok",
        ])
        .await;
    let events = created["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "{created}");
    assert_eq!(events[0]["action"], "AUDIT_ACTION_INTEGRATION_CHANGE");
    assert_eq!(events[0]["target"], "create");
    let denied = world.json(&["audit", "list", "--outcome", "denied"]).await;
    assert!(
        denied["events"].as_array().is_none_or(Vec::is_empty),
        "{denied}"
    );
    let bad = world.run(&["audit", "list", "--outcome", "maybe"]).await;
    assert!(!bad.status.success());
    let verified = world.ok(&["audit", "verify"]).await;
    assert!(
        verified.starts_with("the audit chain is intact (1 events checked)"),
        "{verified}"
    );
}
