//! The endpoint's paths resolve through the cache of integrations read for
//! calls: a rename, a deletion or a disabling through this replica takes
//! effect at the next request, another replica's within the cache's time
//! to live, and a path cached for one organization is nothing to another.

use std::time::Duration;

use serde_json::json;
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests};

use crate::{
    mcp_endpoint::{Endpoint, initialize_at, setup_with},
    support::{admin, member, req},
};

/// The status of an `initialize` POST to `slug` with `token`.
async fn initialize(e: &Endpoint, slug: &str, token: &str) -> reqwest::StatusCode {
    initialize_at(e, slug, token).await.status()
}

fn renamed(id: &str, slug: &str) -> pb::UpdateIntegrationRequest {
    pb::UpdateIntegrationRequest {
        integration: Some(pb::Integration {
            id: id.into(),
            slug: slug.into(),
            ..Default::default()
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: vec!["slug".into()],
        }),
    }
}

async fn a_rename_a_disabling_and_a_deletion_take_effect_at_the_next_request(kind: DbKind) {
    // A long cache time: only the changes themselves may drop the entries.
    let mut e = setup_with(kind, |config| {
        config.integration_cache_ttl = Duration::from_secs(600);
    })
    .await;
    let token = member("org-a");
    assert_eq!(initialize(&e, "example", &token).await, 200, "cached now");

    let id = e.id.clone();
    e.h.client
        .update_integration(req(renamed(&id, "renamed"), &admin("org-a")))
        .await
        .expect("renamed");
    assert_eq!(initialize(&e, "example", &token).await, 404, "the old path");
    assert_eq!(initialize(&e, "renamed", &token).await, 200, "the new path");

    e.h.client
        .disable_integration(req(
            pb::DisableIntegrationRequest { id: id.clone() },
            &admin("org-a"),
        ))
        .await
        .expect("disabled");
    let out = e
        .client(
            "renamed",
            Some(&token),
            json!([{ "op": "callTool", "name": "echo", "arguments": { "text": "x" } }]),
        )
        .await;
    assert!(
        out.to_string().contains("disabled"),
        "a disabled integration's path serves no call: {out}"
    );

    e.h.client
        .delete_integration(req(pb::DeleteIntegrationRequest { id }, &admin("org-a")))
        .await
        .expect("deleted");
    assert_eq!(initialize(&e, "renamed", &token).await, 404, "deleted");
}

async fn a_path_cached_for_one_organization_is_not_found_by_another(kind: DbKind) {
    let e = setup_with(kind, |config| {
        config.integration_cache_ttl = Duration::from_secs(600);
    })
    .await;
    assert_eq!(initialize(&e, "example", &member("org-a")).await, 200);
    assert_eq!(initialize(&e, "example", &member("org-b")).await, 404);
    assert_eq!(initialize(&e, "example", &admin("org-b")).await, 404);
}

async fn another_replicas_rename_is_seen_within_the_cache_time(kind: DbKind) {
    const TTL: Duration = Duration::from_millis(300);
    let e = setup_with(kind, |config| config.integration_cache_ttl = TTL).await;
    let token = member("org-a");
    assert_eq!(initialize(&e, "example", &token).await, 200, "cached now");

    let (_other, mut client) = e.h.replica(|_| {}).await;
    client
        .update_integration(req(renamed(&e.id, "moved"), &admin("org-a")))
        .await
        .expect("renamed by the other replica");
    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    assert_eq!(initialize(&e, "example", &token).await, 404, "the old path");
    assert_eq!(initialize(&e, "moved", &token).await, 200, "the new path");
}

db_tests!(
    a_rename_a_disabling_and_a_deletion_take_effect_at_the_next_request,
    a_path_cached_for_one_organization_is_not_found_by_another,
    another_replicas_rename_is_seen_within_the_cache_time,
);
