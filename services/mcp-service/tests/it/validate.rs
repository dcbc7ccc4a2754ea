//! ValidateIntegration against real MCP servers, and against servers that
//! are not there.

use std::time::{Duration, Instant};

use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests, workspace_binary};

use crate::support::{self, Harness, admin, create, http_integration, member, start, start_with};

async fn validate(h: &mut Harness, id: &str) -> pb::ValidateIntegrationResponse {
    support::validate(h, &admin("org-a"), id).await
}

async fn validation_reports_the_servers_name_and_capability_counts(kind: DbKind) {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start(kind).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await
    .id;
    let report = validate(&mut h, &id).await;
    assert!(report.ok, "{}", report.error);
    let server = report.server.expect("server info");
    assert_eq!(server.name, "switchboard-example");
    assert!(!report.protocol_version.is_empty());
    assert_eq!(report.tool_count, 10, "every page of tools is counted");
    assert_eq!(report.resource_count, 3);
    assert_eq!(report.resource_template_count, 1);
    assert_eq!(report.prompt_count, 1);
    upstream.shutdown().await;
}

async fn validation_explains_a_closed_port(kind: DbKind) {
    let port = switchboard_test_support::grpc::free_port().expect("a port");
    let mut h = start(kind).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let id = create(&mut h, &admin("org-a"), http_integration("gone", &url))
        .await
        .id;
    let started = Instant::now();
    let report = validate(&mut h, &id).await;
    assert!(!report.ok);
    assert!(!report.error.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

async fn validation_gives_up_at_the_connect_timeout(kind: DbKind) {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bound");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let mut h = start(kind).await;
    let mut request = http_integration("silent", &url);
    request.timeouts = Some(pb::Timeouts {
        connect: Some(prost_types::Duration {
            seconds: 1,
            nanos: 0,
        }),
        call: None,
    });
    let id = create(&mut h, &admin("org-a"), request).await.id;
    let started = Instant::now();
    let report = validate(&mut h, &id).await;
    let elapsed = started.elapsed();
    assert!(!report.ok);
    assert!(report.error.contains("timed out"), "{}", report.error);
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    silent.abort();
}

async fn validation_starts_an_allow_listed_stdio_server(kind: DbKind) {
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server");
    let command = binary.display().to_string();
    let allowed = format!("{command} --transport stdio");
    let mut h = start_with(kind, move |config| config.stdio_allow = allowed).await;
    let mut request = http_integration("local", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command,
                    args: vec!["--transport".into(), "stdio".into()],
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    let id = create(&mut h, &admin("org-a"), request).await.id;
    let report = validate(&mut h, &id).await;
    assert!(report.ok, "{}", report.error);
    assert_eq!(report.tool_count, 10);
}

/// A disabled integration is not contacted for a member: its credentials
/// stay home, and the member learns why. An admin may still check it before
/// enabling it again.
async fn a_member_cannot_validate_a_disabled_integration(kind: DbKind) {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start(kind).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await
    .id;
    h.client
        .disable_integration(support::req(
            pb::DisableIntegrationRequest { id: id.clone() },
            &admin("org-a"),
        ))
        .await
        .expect("disabled");
    let before = upstream.stats.snapshot().sessions;
    let refused = h
        .client
        .validate_integration(support::req(
            pb::ValidateIntegrationRequest { id: id.clone() },
            &member("org-a"),
        ))
        .await
        .expect_err("a member cannot validate a disabled integration");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    assert!(refused.message().contains("disabled"), "{refused:?}");
    assert_eq!(
        upstream.stats.snapshot().sessions,
        before,
        "the server was not contacted"
    );
    let report = validate(&mut h, &id).await;
    assert!(report.ok, "an admin may check it: {}", report.error);
    upstream.shutdown().await;
}

db_tests!(
    validation_reports_the_servers_name_and_capability_counts,
    validation_explains_a_closed_port,
    validation_gives_up_at_the_connect_timeout,
    validation_starts_an_allow_listed_stdio_server,
    a_member_cannot_validate_a_disabled_integration,
);
