//! A stdio server that turns hostile inside its allowed command line (a
//! compromised package, a prompt-injected tool): through the `stdio-sandbox`
//! launcher it can neither read mcp-service's environment from `/proc` nor
//! write outside its `HOME`, nor see another session's files, nor execute
//! what it writes, nor reach the network; its home is gone when its session
//! closes, and its organization's homes hold no more than their quota.

use std::{path::PathBuf, time::Duration};

use serde_json::json;

use switchboard_proto::mcp::v1::{self as pb, content_block::Block};
use switchboard_test_support::DbKind;

use crate::support::{Harness, admin, create, http_integration, req, start_with, validate};

const PYTHON: &str = "/usr/bin/python3";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures")
}

#[tokio::test]
async fn a_sandboxed_stdio_server_cannot_read_the_services_environment_or_write_elsewhere() {
    if !std::path::Path::new(PYTHON).exists() {
        eprintln!("skipped: {PYTHON} is not installed");
        return;
    }
    let script = fixtures().join("probe_server.py").display().to_string();
    let home = tempfile::tempdir().expect("a home");
    let outside = tempfile::tempdir().expect("a directory outside the sandbox");
    let target = outside.path().join("escaped.txt");
    let (entry, home_path) = (
        format!("{PYTHON} {script}"),
        home.path().display().to_string(),
    );
    let mut h = start_with(DbKind::Sqlite, move |config| {
        config.stdio_allow = entry;
        config.stdio_home_root = home_path;
        config.stdio_sandbox = Some(env!("CARGO_BIN_EXE_stdio-sandbox").into());
        config.stdio_sandbox_read =
            format!("/usr,/lib,/lib64,/bin,/etc,/dev,{}", fixtures().display());
    })
    .await;
    let token = admin("org-a");
    let mut request = http_integration("probe", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: PYTHON.into(),
                    args: vec![script],
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    let id = create(&mut h, &token, request).await.id;
    let arguments = json!({ "path": target.display().to_string() });
    let response = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id,
                tool_name: "probe".into(),
                arguments: switchboard_proto::json::json_to_struct(&arguments),
                session_scope: String::new(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("answered")
        .into_inner();
    assert!(!response.is_error, "{}", response.error_message);
    let Some(Block::Text(text)) = response.content[0].block.clone() else {
        panic!("text")
    };
    let report: serde_json::Value = serde_json::from_str(&text.text).expect("json");
    assert!(
        report["parent_environ"]
            .as_str()
            .is_some_and(|r| r.starts_with("denied")),
        "{report}"
    );
    assert!(
        report["write_outside"]
            .as_str()
            .is_some_and(|r| r.starts_with("denied")),
        "{report}"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn the_example_server_runs_in_the_sandbox() {
    let binary = switchboard_test_support::workspace_binary(
        "switchboard-example-mcp-server",
        "example-mcp-server",
    )
    .display()
    .to_string();
    let entry = format!("{binary} --transport stdio");
    let mut h = start_with(DbKind::Sqlite, move |config| {
        config.stdio_allow = entry;
        config.stdio_sandbox = Some(env!("CARGO_BIN_EXE_stdio-sandbox").into());
    })
    .await;
    let mut request = http_integration("local", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: binary,
                    args: vec!["--transport".into(), "stdio".into()],
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    let id = create(&mut h, &admin("org-a"), request).await.id;
    let report = validate(&mut h, &admin("org-a"), &id).await;
    assert!(report.ok, "{}", report.error);
    assert_eq!(report.tool_count, 10);
}

/// A service starting the probe server through the sandbox, its homes below
/// `root`, with `configure` applied after.
async fn probe_service(
    root: &std::path::Path,
    configure: impl FnOnce(&mut switchboard_mcp_service::Config) + Send + 'static,
) -> Harness {
    let script = fixtures().join("probe_server.py").display().to_string();
    let root = root.display().to_string();
    start_with(DbKind::Sqlite, move |config| {
        config.stdio_allow = format!("{PYTHON} {script}");
        config.stdio_home_root = root;
        config.stdio_sandbox = Some(env!("CARGO_BIN_EXE_stdio-sandbox").into());
        config.stdio_sandbox_read =
            format!("/usr,/lib,/lib64,/bin,/etc,/dev,{}", fixtures().display());
        configure(config);
    })
    .await
}

/// A probe integration of `org`; its id.
async fn probe_integration(h: &mut Harness, org: &str) -> String {
    let script = fixtures().join("probe_server.py").display().to_string();
    let mut request = http_integration("probe", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: PYTHON.into(),
                    args: vec![script],
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    create(h, &admin(org), request).await.id
}

/// Calls the probe's `try` tool: the report, or the call's error.
async fn attempt(
    h: &mut Harness,
    org: &str,
    id: &str,
    arguments: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let response = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "try".into(),
                arguments_json: arguments.to_string(),
                ..Default::default()
            },
            &admin(org),
        ))
        .await
        .map_err(|status| status.message().to_owned())?
        .into_inner();
    if response.is_error {
        return Err(response.error_message);
    }
    let Some(Block::Text(text)) = response.content.first().and_then(|c| c.block.clone()) else {
        return Err(format!("no text in {response:?}"));
    };
    serde_json::from_str(&text.text).map_err(|e| format!("{e}: {}", text.text))
}

fn denied(report: &serde_json::Value) -> bool {
    report["result"]
        .as_str()
        .is_some_and(|r| r.starts_with("denied"))
}

#[tokio::test]
async fn two_organizations_stdio_servers_cannot_see_each_others_files() {
    let root = tempfile::tempdir().expect("a home root");
    let mut h = probe_service(root.path(), |_| {}).await;
    let (a, b) = (
        probe_integration(&mut h, "org-a").await,
        probe_integration(&mut h, "org-b").await,
    );
    // A plants a file, and a `.pth` file in the Python user site of its home.
    let planted = attempt(
        &mut h,
        "org-a",
        &a,
        json!({"action": "write", "path": "secret.txt"}),
    )
    .await
    .expect("answered");
    assert_eq!(planted["result"], "allowed", "{planted}");
    let pth = ".local/lib/python3/site-packages/steal.pth";
    let written = attempt(&mut h, "org-a", &a, json!({"action": "write", "path": pth}))
        .await
        .expect("answered");
    assert_eq!(written["result"], "allowed", "{written}");
    let home_a = attempt(&mut h, "org-a", &a, json!({"action": "home"}))
        .await
        .expect("answered");
    let home_b = attempt(&mut h, "org-b", &b, json!({"action": "home"}))
        .await
        .expect("answered");
    assert_ne!(home_a["home"], home_b["home"], "{home_a} {home_b}");
    assert_eq!(home_b["cwd"], home_b["home"], "{home_b}");
    assert_eq!(home_b["user_site"], false, "{home_b}");
    for action in [
        json!({"action": "read", "path": planted["path"]}),
        json!({"action": "list", "path": home_a["home"]}),
        json!({"action": "list", "path": root.path().display().to_string()}),
    ] {
        let report = attempt(&mut h, "org-b", &b, action.clone())
            .await
            .expect("answered");
        assert!(denied(&report), "{action}: {report}");
    }
}

#[tokio::test]
async fn a_sandboxed_stdio_server_reaches_no_network() {
    let root = tempfile::tempdir().expect("a home root");
    let mut h = probe_service(root.path(), |_| {}).await;
    let id = probe_integration(&mut h, "org-a").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback listener");
    let port = listener.local_addr().expect("bound").port();
    for action in [
        json!({"action": "connect", "port": port}),
        json!({"action": "udp"}),
    ] {
        let report = attempt(&mut h, "org-a", &id, action.clone())
            .await
            .expect("answered");
        assert!(denied(&report), "{action}: {report}");
    }
    let accepted = tokio::time::timeout(Duration::from_millis(500), listener.accept()).await;
    assert!(accepted.is_err(), "a connection arrived: {accepted:?}");
}

#[tokio::test]
async fn a_file_a_stdio_server_writes_to_its_home_cannot_be_executed() {
    let root = tempfile::tempdir().expect("a home root");
    let mut h = probe_service(root.path(), |_| {}).await;
    let id = probe_integration(&mut h, "org-a").await;
    let report = attempt(&mut h, "org-a", &id, json!({"action": "exec"}))
        .await
        .expect("answered");
    assert!(denied(&report), "{report}");
}

#[tokio::test]
async fn a_stdio_home_is_gone_when_its_session_closes_and_leftovers_at_start() {
    let root = tempfile::tempdir().expect("a home root");
    let leftover = root.path().join("home-0123456789abcdef");
    std::fs::create_dir_all(leftover.join(".local")).expect("a leftover home");
    let kept = root.path().join("not-a-home");
    std::fs::create_dir(&kept).expect("another directory");
    let mut h = probe_service(root.path(), |_| {}).await;
    assert!(
        !leftover.exists(),
        "a home left by an earlier run is removed"
    );
    assert!(kept.exists(), "only homes are removed");
    let id = probe_integration(&mut h, "org-a").await;
    let report = attempt(&mut h, "org-a", &id, json!({"action": "home"}))
        .await
        .expect("answered");
    let home = PathBuf::from(report["home"].as_str().expect("a home"));
    assert!(home.starts_with(root.path()), "{report}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&home).expect("the home").permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    h.client
        .delete_integration(req(
            pb::DeleteIntegrationRequest { id: id.clone() },
            &admin("org-a"),
        ))
        .await
        .expect("deleted");
    assert!(
        gone_within(&home, Duration::from_secs(10)).await,
        "{home:?}"
    );
}

/// Whether `path` disappears within `bound` (a loose bound).
async fn gone_within(path: &std::path::Path, bound: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    while tokio::time::Instant::now() < deadline {
        if !path.exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn an_organization_over_its_disk_quota_loses_its_stdio_sessions() {
    const FILE: u64 = 1 << 20;
    let root = tempfile::tempdir().expect("a home root");
    let mut h = probe_service(root.path(), |config| {
        config.stdio_max_file_bytes = FILE;
        config.stdio_org_disk_quota_bytes = 4 * FILE;
        config.stdio_disk_check_interval = Duration::from_millis(100);
    })
    .await;
    let id = probe_integration(&mut h, "org-a").await;
    // One file: up to RLIMIT_FSIZE, not a byte more.
    let at_limit = write(&mut h, &id, "at-limit", FILE).await;
    assert_eq!(at_limit["result"], "allowed", "{at_limit}");
    let over = write(&mut h, &id, "over-limit", FILE + 1).await;
    assert!(denied(&over), "{over}");
    let home = write(&mut h, &id, "small", 1).await["path"]
        .as_str()
        .and_then(|p| PathBuf::from(p).parent().map(PathBuf::from))
        .expect("the home");
    // Under the quota the session lives on.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(home.exists());
    // Past it (4 MiB), the organization's session ends and its home goes.
    for name in ["b", "c", "d", "e"] {
        let arguments = json!({"action": "write", "path": name, "bytes": FILE});
        // The calls after the quota check ended the session may fail.
        let _ = attempt(&mut h, "org-a", &id, arguments).await;
    }
    assert!(
        gone_within(&home, Duration::from_secs(10)).await,
        "{home:?}"
    );
    // The next call starts a new session, in a new, empty home.
    let report = attempt(&mut h, "org-a", &id, json!({"action": "home"}))
        .await
        .expect("a new session");
    assert_ne!(report["home"].as_str(), home.to_str(), "{report}");
}

/// Writes `bytes` bytes at `path` in the home of org-a's probe `id`.
async fn write(h: &mut Harness, id: &str, path: &str, bytes: u64) -> serde_json::Value {
    let arguments = json!({"action": "write", "path": path, "bytes": bytes});
    attempt(h, "org-a", id, arguments).await.expect("answered")
}
