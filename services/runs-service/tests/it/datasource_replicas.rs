//! Data-source bytes per organization held across replicas: each import
//! sums the organization's bytes from the shared database, so two replicas
//! (two adapters on one PostgreSQL database) keep to one limit, and an
//! organization's own limit from the limits file holds on both.

use switchboard_runs_service::{
    domain::{
        datasource::{Capacity, DataSources, ImportError, ImportLimits, QueryLimits},
        ids::ThreadId,
    },
    outbound::{datasource::SqlDataSources, sql::SqlRunsRepository},
};
use switchboard_test_support::{DbKind, TestDb};

use crate::hostile_datasources::numbers_csv;

/// One replica's data sources on the database at `url`, with `org_bytes`
/// for every organization and `own` for some.
async fn replica(url: &str, org_bytes: u64, own: &[(&str, u64)]) -> SqlDataSources {
    let pool = crate::stores::migrated_pool(url).await;
    let capacity = Capacity {
        org_bytes,
        ..Capacity::default()
    };
    SqlDataSources::new(pool, ImportLimits::default(), QueryLimits::default())
        .with_capacity(capacity)
        .with_org_bytes(own.iter().map(|&(org, bytes)| (org.to_owned(), bytes)))
}

async fn thread(repo: &SqlRunsRepository, org: &str) -> ThreadId {
    crate::stores::stored_thread(repo, org, "alice").await
}

async fn import(
    sources: &SqlDataSources,
    thread: ThreadId,
    name: &str,
    csv: &str,
) -> Result<(), ImportError> {
    sources
        .import_csv(
            thread,
            name,
            "client",
            None,
            bytes::Bytes::copy_from_slice(csv.as_bytes()),
        )
        .await
        .map(drop)
}

#[tokio::test]
async fn an_organization_data_source_bytes_hold_across_two_replicas_on_one_postgresql() {
    let db = TestDb::new(DbKind::Postgres)
        .await
        .expect("a test database");
    let csv = numbers_csv(100);
    let size = csv.len() as u64;
    let own = [("org-big", 4 * size)];
    let a = replica(&db.url, 2 * size, &own).await;
    let b = replica(&db.url, 2 * size, &own).await;
    let repo = SqlRunsRepository::new(crate::stores::migrated_pool(&db.url).await);

    // One file on each replica fills the organization's two; a third is
    // refused on either (each replica alone would take two).
    let (first, second) = (thread(&repo, "org-a").await, thread(&repo, "org-a").await);
    import(&a, first, "one", &csv).await.expect("imported on a");
    import(&b, second, "two", &csv)
        .await
        .expect("imported on b");
    for sources in [&a, &b] {
        let error = import(sources, second, "three", &csv)
            .await
            .expect_err("past the organization's bytes");
        assert!(
            matches!(error, ImportError::OrgQuotaExceeded { used, limit, .. } if used == 2 * size && limit == 2 * size),
            "{error:?}"
        );
    }

    // An organization with its own limit of four files gets two on each.
    let big = thread(&repo, "org-big").await;
    for (i, sources) in [&a, &b, &a, &b].into_iter().enumerate() {
        import(sources, big, &format!("t{i}"), &csv)
            .await
            .expect("within its own limit");
    }
    let error = import(&b, big, "t4", &csv)
        .await
        .expect_err("past its own limit");
    assert!(
        matches!(error, ImportError::OrgQuotaExceeded { limit, .. } if limit == 4 * size),
        "{error:?}"
    );
}
