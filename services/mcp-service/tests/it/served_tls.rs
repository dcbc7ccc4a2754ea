//! mcp-service serving TLS and mutual TLS from certificate files: health
//! answers over it, a rotated certificate is served without a restart, a
//! client without a certificate is refused when a client CA is set, and the
//! SPIFFE ID of a client's certificate is the calling service its policies
//! test and its audit events name.

use std::time::Duration;

use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::mcp::v1::{
    self as pb, audit_service_client::AuditServiceClient, mcp_service_client::McpServiceClient,
    policy_service_client::PolicyServiceClient,
};
use switchboard_server::RunningServer;
use switchboard_test_support::{
    DbKind, TEST_JWT_SECRET, TestDb, db_tests,
    pki::{Issued, TestPki},
};
use tokio::io::AsyncReadExt as _;
use tonic::transport::{Channel, ClientTlsConfig};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::support::{admin, http_integration, req};

db_tests!(
    serves_tls_from_files_with_health_and_refuses_plaintext,
    a_rotated_certificate_is_served_to_the_next_connection_and_a_bad_one_is_not,
    a_client_that_does_not_finish_its_handshake_is_disconnected,
    with_a_client_ca_only_certified_clients_are_served_and_policies_and_audit_see_their_spiffe_id
);

const BILLING: &str = "spiffe://corp.example/ns/billing/sa/api";

struct Served {
    _db: TestDb,
    server: RunningServer,
}

async fn serve(
    kind: DbKind,
    cert: &Issued,
    client_ca: Option<&std::path::Path>,
    configure: impl FnOnce(&mut switchboard_mcp_service::Config),
) -> Served {
    let db = TestDb::new(kind).await.expect("a test database");
    let mut config = switchboard_mcp_service::Config::for_tests(&db.url, TEST_JWT_SECRET);
    let tls = &mut config.common.server.tls;
    tls.tls_cert_file = Some(cert.cert_file.clone());
    tls.tls_key_file = Some(cert.key_file.clone());
    tls.tls_client_ca_file = client_ca.map(std::path::Path::to_path_buf);
    configure(&mut config);
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    assert!(server.url().starts_with("https://"), "{}", server.url());
    Served { _db: db, server }
}

async fn channel(url: &str, tls: ClientTlsConfig) -> Result<Channel, tonic::transport::Error> {
    Channel::from_shared(url.to_owned())
        .expect("a URL")
        .tls_config(tls)?
        .connect()
        .await
}

/// Whether health answers SERVING over a new connection made with `tls`.
async fn serving(url: &str, tls: ClientTlsConfig) -> bool {
    let Ok(channel) = channel(url, tls).await else {
        return false;
    };
    HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await
        .is_ok_and(|r| r.into_inner().status == 1)
}

async fn serves_tls_from_files_with_health_and_refuses_plaintext(kind: DbKind) {
    let pki = TestPki::new("test CA");
    let served = serve(kind, &pki.server("server"), None, |_| {}).await;
    let url = served.server.url();
    assert!(serving(&url, pki.client_tls(None)).await, "health over TLS");

    let mut client = McpServiceClient::new(channel(&url, pki.client_tls(None)).await.expect("TLS"));
    let integration = client
        .create_integration(req(
            http_integration("example", "http://127.0.0.1:9/mcp"),
            &admin("org-a"),
        ))
        .await
        .expect("an API call over TLS")
        .into_inner();
    assert!(integration.integration.is_some());

    let plaintext = url.replacen("https://", "http://", 1);
    let refused = match Channel::from_shared(plaintext)
        .expect("a URL")
        .connect()
        .await
    {
        Err(_) => true,
        Ok(channel) => HealthClient::new(channel)
            .check(HealthCheckRequest::default())
            .await
            .is_err(),
    };
    assert!(
        refused,
        "plaintext HTTP/2 must not be served on a TLS listener"
    );
}

async fn a_rotated_certificate_is_served_to_the_next_connection_and_a_bad_one_is_not(kind: DbKind) {
    let old_ca = TestPki::new("old CA");
    let new_ca = TestPki::new("new CA");
    let files = old_ca.server("server");
    let served = serve(kind, &files, None, |config| {
        config.common.server.tls.tls_reload_interval = Duration::from_millis(100);
    })
    .await;
    let url = served.server.url();
    assert!(serving(&url, old_ca.client_tls(None)).await);
    assert!(!serving(&url, new_ca.client_tls(None)).await);

    // A broken file is not served: the old certificate stays.
    std::fs::write(&files.cert_file, "not a certificate").expect("written");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        serving(&url, old_ca.client_tls(None)).await,
        "old certificate kept"
    );

    new_ca.server("rotated").write_over(&files);
    let rotated = async {
        while !serving(&url, new_ca.client_tls(None)).await {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), rotated)
        .await
        .expect("the rotated certificate is served without a restart");
    assert!(!serving(&url, old_ca.client_tls(None)).await);
}

async fn a_client_that_does_not_finish_its_handshake_is_disconnected(kind: DbKind) {
    let pki = TestPki::new("test CA");
    let served = serve(kind, &pki.server("server"), None, |config| {
        config.common.server.tls.tls_handshake_timeout = Duration::from_millis(300);
    })
    .await;
    let mut silent = tokio::net::TcpStream::connect(served.server.addr)
        .await
        .expect("connects");
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf))
        .await
        .expect("the server closes the connection after the handshake timeout");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // The server still serves other clients.
    assert!(serving(&served.server.url(), pki.client_tls(None)).await);
}

async fn with_a_client_ca_only_certified_clients_are_served_and_policies_and_audit_see_their_spiffe_id(
    kind: DbKind,
) {
    let pki = TestPki::new("test CA");
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let served = serve(kind, &pki.server("server"), Some(&pki.ca_file()), |_| {}).await;
    let url = served.server.url();

    // Without a certificate: refused, probes included.
    assert!(!serving(&url, pki.client_tls(None)).await);
    // With a certificate of another CA: refused.
    let stranger = TestPki::new("another CA").client("stranger", Some(BILLING), "billing");
    assert!(!serving(&url, pki.client_tls(Some(&stranger))).await);

    let billing = pki.client("billing", Some(BILLING), "billing");
    let channel = channel(&url, pki.client_tls(Some(&billing)))
        .await
        .expect("a certified client connects");
    let mut client = McpServiceClient::new(channel.clone());
    let token = admin("org-a");
    let id = client
        .create_integration(req(http_integration("example", &upstream.url()), &token))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;
    let response = client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.clone(),
                tool_name: "echo".into(),
                arguments_json: r#"{"text":"hi"}"#.into(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("the tool call answers")
        .into_inner();
    assert!(!response.is_error, "{response:?}");

    // Tool policies see the certificate's SPIFFE ID as the calling service.
    PolicyServiceClient::new(channel.clone())
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(pb::Policy {
                    name: "billing-no-add".into(),
                    rules: vec![pb::PolicyRule {
                        name: "no-add".into(),
                        condition: format!("caller.service == '{BILLING}' && tool.name == 'add'"),
                        effect: pb::PolicyEffect::Deny.into(),
                        reason: "billing may not add".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &token,
        ))
        .await
        .expect("the policy is written");
    let denied = client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.clone(),
                tool_name: "add".into(),
                arguments_json: r#"{"a":1,"b":2}"#.into(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect_err("the rule on caller.service denies it");
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");

    let events = AuditServiceClient::new(channel)
        .list_audit_events(req(pb::ListAuditEventsRequest::default(), &token))
        .await
        .expect("listed")
        .into_inner()
        .events;
    let call = events
        .iter()
        .find(|e| e.target == "echo")
        .expect("the tool call is audited");
    assert_eq!(call.service, BILLING, "{call:?}");
    assert!(events.iter().all(|e| e.service == BILLING), "{events:?}");
}
