//! The chassis: health, reflection, authentication, storage start-up and the
//! binary's lifecycle.

use switchboard_proto::RUNS_SERVICE_NAME as SERVICE;
use switchboard_server::RunningServer;
use switchboard_test_support::{
    DbKind, TEST_JWT_SECRET, TestDb, db_tests,
    grpc::{
        check_auth_refusals, check_binary_lifecycle, check_health_and_reflection,
        check_migrate_only,
    },
};

async fn start(kind: DbKind) -> (TestDb, RunningServer) {
    let db = TestDb::new(kind).await.expect("a test database");
    let server = switchboard_runs_service::spawn(switchboard_runs_service::Config::for_tests(
        &db.url,
        TEST_JWT_SECRET,
        "http://127.0.0.1:1",
    ))
    .await
    .expect("the service starts on a migrated database");
    (db, server)
}

async fn health_and_reflection_are_served(kind: DbKind) {
    let (_db, server) = start(kind).await;
    check_health_and_reflection(&server.url(), SERVICE)
        .await
        .expect("health and reflection");
    server.stop().await.expect("a clean stop");
}

async fn calls_without_a_valid_token_are_unauthenticated(kind: DbKind) {
    let (_db, server) = start(kind).await;
    check_auth_refusals(&server.url(), "/switchboard.runs.v1.RunsService/ListAgents")
        .await
        .expect("authentication");
    server.stop().await.expect("a clean stop");
}

async fn the_migration_step_migrates_and_exits(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    // Every migration of the service, the same on both databases.
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .expect("the migrations")
        .count();
    let migrations = i64::try_from(migrations).expect("a handful of migrations");
    check_migrate_only(env!("CARGO_BIN_EXE_runs-service"), &db.url, migrations)
        .await
        .expect("the migration step");
}

db_tests!(
    the_migration_step_migrates_and_exits,
    health_and_reflection_are_served,
    calls_without_a_valid_token_are_unauthenticated,
);

#[tokio::test]
async fn the_binary_serves_and_stops_cleanly_on_sigterm() {
    check_binary_lifecycle(env!("CARGO_BIN_EXE_runs-service"), SERVICE, &[])
        .await
        .expect("the binary's lifecycle");
}
