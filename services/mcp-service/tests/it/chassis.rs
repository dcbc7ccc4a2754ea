//! The chassis: health, reflection, authentication, storage start-up and the
//! binary's lifecycle.

use switchboard_proto::MCP_SERVICE_NAME as SERVICE;
use switchboard_server::RunningServer;
use switchboard_test_support::{
    DbKind, TEST_JWT_SECRET, TestDb, db_tests,
    grpc::{
        check_auth_refusals, check_binary_lifecycle, check_health_and_reflection,
        check_migrate_only, health_status, reflected_services,
    },
};

async fn start(kind: DbKind) -> (TestDb, RunningServer) {
    let db = TestDb::new(kind).await.expect("a test database");
    let server = switchboard_mcp_service::spawn(switchboard_mcp_service::Config::for_tests(
        &db.url,
        TEST_JWT_SECRET,
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
    // The services beside McpService are reported and described too.
    let services = reflected_services(&server.url()).await.expect("reflection");
    for name in [
        "switchboard.mcp.v1.PolicyService",
        "switchboard.mcp.v1.ToolsetsService",
    ] {
        assert!(services.iter().any(|s| s == name), "{name}: {services:?}");
        let health = health_status(&server.url(), name).await.expect("health");
        assert_eq!(
            health,
            tonic_health::pb::health_check_response::ServingStatus::Serving,
            "{name}"
        );
    }
    server.stop().await.expect("a clean stop");
}

async fn calls_without_a_valid_token_are_unauthenticated(kind: DbKind) {
    let (_db, server) = start(kind).await;
    check_auth_refusals(
        &server.url(),
        "/switchboard.mcp.v1.McpService/ListIntegrations",
    )
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
    check_migrate_only(env!("CARGO_BIN_EXE_mcp-service"), &db.url, migrations)
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
    // Development mode stands in for the key that seals integration secrets.
    check_binary_lifecycle(
        env!("CARGO_BIN_EXE_mcp-service"),
        SERVICE,
        &[("SWITCHBOARD_DEV_MODE", "true")],
    )
    .await
    .expect("the binary's lifecycle");
}

#[test]
fn the_binary_refuses_to_start_without_a_sealing_key_outside_dev_mode() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-service"))
        .current_dir(dir.path())
        .args(["--listen", "127.0.0.1:0"])
        .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
        .env_remove("SWITCHBOARD_SECRET_KEYS")
        .env_remove("SWITCHBOARD_DEV_MODE")
        .output()
        .expect("the binary runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("SWITCHBOARD_SECRET_KEYS"), "{stderr}");
}
