//! Clients generated from `proto/` in another language reach both services.

use std::path::{Path, PathBuf};

use switchboard_test_support::{TEST_JWT_SECRET, TestDb, token};

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

pub(crate) fn python() -> PathBuf {
    let python = std::env::var_os("SWITCHBOARD_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".tools/venv/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-tools.sh (make tools)",
        python.display()
    );
    python
}

#[tokio::test]
async fn a_generated_python_client_calls_both_services() {
    let mcp_db = TestDb::sqlite().expect("a database");
    let runs_db = TestDb::sqlite().expect("a database");
    let mcp = switchboard_mcp_service::spawn(switchboard_mcp_service::Config::for_tests(
        &mcp_db.url,
        TEST_JWT_SECRET,
    ))
    .await
    .expect("mcp-service starts");
    let runs = switchboard_runs_service::spawn(switchboard_runs_service::Config::for_tests(
        &runs_db.url,
        TEST_JWT_SECRET,
        &mcp.url(),
    ))
    .await
    .expect("runs-service starts");

    let root = workspace_root();
    let output = tokio::process::Command::new(python())
        .arg(root.join("tests/python/client_smoke.py"))
        .arg("--proto-dir")
        .arg(root.join("proto"))
        .args(["--mcp", &mcp.addr.to_string()])
        .args(["--runs", &runs.addr.to_string()])
        .args(["--token", &token("org-py", "user-py", &["admin"])])
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("mcp-service ListIntegrations: ok"),
        "{stdout}"
    );
    assert!(stdout.contains("runs-service ListAgents: ok"), "{stdout}");

    runs.stop().await.expect("runs-service stops");
    mcp.stop().await.expect("mcp-service stops");
}
