//! The CLI over TLS: it trusts a private CA from `--ca-file` and presents a
//! client certificate to a service that requires one.

use switchboard_server::RunningServer;
use switchboard_test_support::{TEST_JWT_SECRET, TestDb, pki::TestPki, token};

use crate::world::ORG;

async fn mutual_tls_mcp_service(pki: &TestPki) -> (TestDb, RunningServer) {
    let db = TestDb::sqlite().expect("a database");
    let mut config = switchboard_mcp_service::Config::for_tests(&db.url, TEST_JWT_SECRET);
    let cert = pki.server("mcp-service");
    let tls = &mut config.common.server.tls;
    tls.tls_cert_file = Some(cert.cert_file);
    tls.tls_key_file = Some(cert.key_file);
    tls.tls_client_ca_file = Some(pki.ca_file());
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    (db, server)
}

async fn list(url: &str, extra_env: &[(&str, String)]) -> std::process::Output {
    let home = tempfile::tempdir().expect("a temporary home");
    tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["--json", "integrations", "list"])
        .env_clear()
        .env("SWITCHBOARD_MCP_ADDR", url)
        .env("SWITCHBOARD_TOKEN", token(ORG, "user-cli", &["admin"]))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .envs(extra_env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .await
        .expect("the CLI runs")
}

#[tokio::test]
async fn the_cli_trusts_a_ca_file_and_presents_its_client_certificate() {
    let pki = TestPki::new("cluster CA");
    let (_db, server) = mutual_tls_mcp_service(&pki).await;
    let url = server.url();
    assert!(url.starts_with("https://"), "{url}");
    let ca = ("SWITCHBOARD_CA_FILE", pki.ca_file().display().to_string());

    let untrusted = list(&url, &[]).await;
    assert!(
        !untrusted.status.success(),
        "a private CA is not trusted unasked"
    );

    let anonymous = list(&url, std::slice::from_ref(&ca)).await;
    assert!(
        !anonymous.status.success(),
        "mcp-service requires a client certificate"
    );

    let client = pki.client(
        "operator",
        Some("spiffe://cluster.local/ns/ops/sa/cli"),
        "cli",
    );
    let certified = list(
        &url,
        &[
            ca,
            (
                "SWITCHBOARD_CLIENT_CERT_FILE",
                client.cert_file.display().to_string(),
            ),
            (
                "SWITCHBOARD_CLIENT_KEY_FILE",
                client.key_file.display().to_string(),
            ),
        ],
    )
    .await;
    assert!(
        certified.status.success(),
        "{}",
        String::from_utf8_lossy(&certified.stderr)
    );
}
