//! A stdio server that turns hostile inside its allowed command line (a
//! compromised package, a prompt-injected tool): through the `stdio-sandbox`
//! launcher it can neither read mcp-service's environment from `/proc` nor
//! write outside its `HOME`.

use std::path::PathBuf;

use switchboard_proto::mcp::v1::{self as pb, content_block::Block};
use switchboard_test_support::DbKind;

use crate::support::{admin, create, http_integration, req, start_with, validate};

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
        config.stdio_home = home_path;
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
    let arguments = serde_json::json!({ "path": target.display().to_string() });
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
