//! The idempotency-key store on SQLite and PostgreSQL, with the migrations
//! the services ship.

use std::time::Duration;

use sqlx::migrate::Migrator;
use switchboard_db::{
    Migrations, open,
    request_ids::{Claim, RequestIds, RequestKey},
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

static SQLITE: Migrator = sqlx::migrate!("../../services/runs-service/migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("../../services/runs-service/migrations/postgres");

async fn store(kind: DbKind, window: Duration) -> (TestDb, RequestIds) {
    let db = TestDb::new(kind).await.expect("a database");
    let opened = open(
        &db.url,
        Migrations {
            sqlite: &SQLITE,
            postgres: &POSTGRES,
        },
        4,
    )
    .await
    .expect("migrated");
    (db, RequestIds::new(opened.pool, window))
}

fn key(org: &str, request_id: &str) -> RequestKey {
    RequestKey {
        org_id: org.into(),
        method: "CreateAgent",
        request_id: request_id.into(),
    }
}

async fn a_repeat_gets_the_first_response_back(kind: DbKind) {
    let (_db, ids) = store(kind, Duration::from_secs(60)).await;
    let k = key("org-a", "req-1");
    assert_eq!(ids.claim(&k, "fp").await.expect("claim"), Claim::First);
    assert_eq!(ids.claim(&k, "fp").await.expect("claim"), Claim::Pending);
    ids.finish(&k, b"response").await.expect("finish");
    assert_eq!(
        ids.claim(&k, "fp").await.expect("claim"),
        Claim::Done(b"response".to_vec())
    );
}

async fn a_key_reused_for_other_content_is_refused(kind: DbKind) {
    let (_db, ids) = store(kind, Duration::from_secs(60)).await;
    let k = key("org-a", "req-1");
    assert_eq!(ids.claim(&k, "fp-1").await.expect("claim"), Claim::First);
    ids.finish(&k, b"first").await.expect("finish");
    assert_eq!(ids.claim(&k, "fp-2").await.expect("claim"), Claim::Reused);
}

async fn keys_are_scoped_by_organization_and_method(kind: DbKind) {
    let (_db, ids) = store(kind, Duration::from_secs(60)).await;
    assert_eq!(
        ids.claim(&key("org-a", "same"), "fp").await.expect("claim"),
        Claim::First
    );
    assert_eq!(
        ids.claim(&key("org-b", "same"), "other")
            .await
            .expect("claim"),
        Claim::First,
        "another organization's key does not collide"
    );
    let thread = RequestKey {
        method: "CreateThread",
        ..key("org-a", "same")
    };
    assert_eq!(ids.claim(&thread, "x").await.expect("claim"), Claim::First);
}

async fn a_failed_request_frees_its_key(kind: DbKind) {
    let (_db, ids) = store(kind, Duration::from_secs(60)).await;
    let k = key("org-a", "req-1");
    assert_eq!(ids.claim(&k, "fp").await.expect("claim"), Claim::First);
    ids.forget(&k).await.expect("forget");
    assert_eq!(ids.claim(&k, "fp").await.expect("claim"), Claim::First);
}

async fn a_key_past_its_window_is_new_again(kind: DbKind) {
    let (_db, ids) = store(kind, Duration::ZERO).await;
    let k = key("org-a", "req-1");
    assert_eq!(ids.claim(&k, "fp").await.expect("claim"), Claim::First);
    ids.finish(&k, b"old").await.expect("finish");
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        ids.claim(&k, "other").await.expect("claim"),
        Claim::First,
        "an expired key can be used for a new request"
    );
}

db_tests!(
    a_repeat_gets_the_first_response_back,
    a_key_reused_for_other_content_is_refused,
    keys_are_scoped_by_organization_and_method,
    a_failed_request_frees_its_key,
    a_key_past_its_window_is_new_again,
);
