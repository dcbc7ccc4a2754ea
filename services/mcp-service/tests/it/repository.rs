//! The conformance suite of the integration repository port, run against
//! every adapter (SQLite and PostgreSQL).

use std::sync::Arc;

use base64::Engine as _;
use secrecy::{ExposeSecret as _, SecretString};
use switchboard_db::DatabaseArgs;
use switchboard_mcp_service::{
    domain::{
        guardrails::{GuardrailSettings, SettingInput},
        integration::{
            AuthConfig, DisplayName, Integration, IntegrationId, IntegrationKind, OrgId, Secrets,
            Slug, Timeouts,
        },
        ports::{IntegrationRepository, ListQuery, RepositoryError},
        transport::{StreamableHttp, Transport},
    },
    outbound::storage::{
        secret_box::KeyRing,
        sql::{MIGRATIONS, SqlIntegrationRepository},
    },
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

fn key(id: &str, byte: u8) -> String {
    format!(
        "{id}:{}",
        base64::engine::general_purpose::STANDARD.encode([byte; 32])
    )
}

async fn repository(db: &TestDb, keys: &str) -> SqlIntegrationRepository {
    let database = DatabaseArgs::for_url(&db.url)
        .open("mcp", MIGRATIONS)
        .await
        .expect("migrated");
    SqlIntegrationRepository::new(database.pool, Arc::new(KeyRing::parse(keys).expect("keys")))
}

fn integration(org: &str, slug: &str, created_at: i64) -> Integration {
    let mut secrets = Secrets::default();
    secrets.insert(
        Secrets::BEARER_TOKEN,
        SecretString::from(format!("token-{slug}")),
    );
    Integration {
        id: IntegrationId::new(),
        org_id: OrgId(org.into()),
        display_name: DisplayName::parse("n", "Name").expect("valid"),
        slug: Slug::parse("s", slug).expect("valid"),
        kind: IntegrationKind::Predefined("github".into()),
        transport: Transport::StreamableHttp(StreamableHttp {
            url: "https://mcp.example.com/mcp".into(),
        }),
        auth: AuthConfig::BearerToken,
        enabled: true,
        timeouts: Timeouts {
            connect_ms: Some(1500),
            call_ms: None,
        },
        guardrails: GuardrailSettings::parse(
            "guardrails",
            &[SettingInput {
                detector: "email".into(),
                place: "result".into(),
                action: "redact".into(),
            }],
        )
        .expect("valid"),
        secrets,
        created_at,
        updated_at: created_at,
    }
}

fn org(name: &str) -> OrgId {
    OrgId(name.into())
}

async fn stored_integrations_round_trip_with_their_secrets(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("db");
    let repo = repository(&db, &key("k1", 1)).await;
    let original = integration("org-a", "github", 1000);
    repo.insert(&original).await.expect("inserted");
    let loaded = repo
        .get(&org("org-a"), original.id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(loaded.slug, original.slug);
    assert_eq!(loaded.kind, original.kind);
    assert_eq!(loaded.transport, original.transport);
    assert_eq!(loaded.auth, original.auth);
    assert_eq!(loaded.timeouts, original.timeouts);
    assert_eq!(loaded.guardrails, original.guardrails);
    assert_eq!(loaded.guardrails.settings().len(), 1);
    assert_eq!(loaded.created_at, 1000);
    assert_eq!(
        loaded
            .secrets
            .get(Secrets::BEARER_TOKEN)
            .map(|s| s.expose_secret().to_owned()),
        Some("token-github".to_owned())
    );
    assert!(
        repo.get(&org("org-b"), original.id)
            .await
            .expect("read")
            .is_none()
    );
}

async fn slugs_are_unique_per_organization(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("db");
    let repo = repository(&db, &key("k1", 1)).await;
    repo.insert(&integration("org-a", "github", 1))
        .await
        .expect("first");
    assert!(matches!(
        repo.insert(&integration("org-a", "github", 2)).await,
        Err(RepositoryError::SlugTaken)
    ));
    repo.insert(&integration("org-b", "github", 3))
        .await
        .expect("other org");
    let mut renamed = integration("org-a", "linear", 4);
    repo.insert(&renamed).await.expect("second");
    renamed.slug = Slug::parse("s", "github").expect("valid");
    assert!(matches!(
        repo.update(&renamed).await,
        Err(RepositoryError::SlugTaken)
    ));
}

async fn lists_page_in_creation_order_within_one_organization(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("db");
    let repo = repository(&db, &key("k1", 1)).await;
    let mut expected = Vec::new();
    for (i, slug) in ["a", "b", "c", "d"].iter().enumerate() {
        let mut item = integration("org-a", slug, 100 + i64::try_from(i / 2).expect("small"));
        item.enabled = *slug != "c";
        repo.insert(&item).await.expect("inserted");
        expected.push(item);
    }
    repo.insert(&integration("org-b", "z", 50))
        .await
        .expect("other org");
    expected.sort_by_key(|i| (i.created_at, i.id));

    let first = repo
        .list(
            &org("org-a"),
            &ListQuery {
                after: None,
                limit: 2,
                enabled_only: false,
            },
        )
        .await
        .expect("page");
    let last = first.last().expect("two rows");
    let second = repo
        .list(
            &org("org-a"),
            &ListQuery {
                after: Some((last.created_at, last.id)),
                limit: 10,
                enabled_only: false,
            },
        )
        .await
        .expect("page");
    let ids: Vec<_> = first.iter().chain(&second).map(|i| i.id).collect();
    assert_eq!(ids, expected.iter().map(|i| i.id).collect::<Vec<_>>());

    let enabled = repo
        .list(
            &org("org-a"),
            &ListQuery {
                after: None,
                limit: 10,
                enabled_only: true,
            },
        )
        .await
        .expect("page");
    assert_eq!(enabled.len(), 3);
}

async fn updates_and_deletes_touch_only_the_callers_rows(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("db");
    let repo = repository(&db, &key("k1", 1)).await;
    let mut item = integration("org-a", "github", 1);
    repo.insert(&item).await.expect("inserted");

    let mut foreign = item.clone();
    foreign.org_id = org("org-b");
    assert!(!repo.update(&foreign).await.expect("no error"));
    assert!(!repo.delete(&org("org-b"), item.id).await.expect("no error"));

    item.enabled = false;
    item.secrets = Secrets::default();
    assert!(repo.update(&item).await.expect("updated"));
    let loaded = repo
        .get(&org("org-a"), item.id)
        .await
        .expect("read")
        .expect("found");
    assert!(!loaded.enabled);
    assert!(loaded.secrets.is_empty());
    assert!(repo.delete(&org("org-a"), item.id).await.expect("deleted"));
    assert!(
        repo.get(&org("org-a"), item.id)
            .await
            .expect("read")
            .is_none()
    );
}

async fn rotated_keys_still_open_old_rows_and_seal_new_ones(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("db");
    let old = repository(&db, &key("k1", 1)).await;
    let mut item = integration("org-a", "github", 1);
    old.insert(&item).await.expect("inserted");

    let rotated = repository(&db, &format!("{},{}", key("k2", 2), key("k1", 1))).await;
    let loaded = rotated
        .get(&org("org-a"), item.id)
        .await
        .expect("read")
        .expect("found");
    assert!(loaded.secrets.contains(Secrets::BEARER_TOKEN));
    item.updated_at = 2;
    rotated.update(&item).await.expect("re-sealed with k2");

    let new_only = repository(&db, &key("k2", 2)).await;
    new_only
        .get(&org("org-a"), item.id)
        .await
        .expect("read")
        .expect("found");
    let without_key = repository(&db, &key("k3", 3)).await;
    assert!(
        without_key.get(&org("org-a"), item.id).await.is_err(),
        "an unknown key is an error"
    );
}

db_tests!(
    stored_integrations_round_trip_with_their_secrets,
    slugs_are_unique_per_organization,
    lists_page_in_creation_order_within_one_organization,
    updates_and_deletes_touch_only_the_callers_rows,
    rotated_keys_still_open_old_rows_and_seal_new_ones,
);
