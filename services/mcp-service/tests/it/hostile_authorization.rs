//! Hostile servers in the OAuth authorization code flow: protected resource
//! metadata past the response bound, and metadata naming an authorization
//! server at an address the outbound policy refuses. Each fails with a clear
//! FAILED_PRECONDITION, having read no more than the bound and dialled
//! nothing refused.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};
use tonic::Code;

use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests, http_integration_with_auth};

use crate::support::{admin, create, req, start_with};

/// A server on loopback that refuses every MCP request with a 401 pointing
/// at its protected resource metadata, and answers that with `metadata`.
async fn protected_server(metadata: impl FnOnce(&str) -> String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let metadata = metadata(&base);
    let challenge = format!("Bearer resource_metadata=\"{base}/prm\"");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let metadata = metadata.clone();
            let challenge = challenge.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let Ok(n) = stream.read(&mut buf).await else {
                    return;
                };
                let request = String::from_utf8_lossy(&buf[..n]);
                let response = if request.starts_with("GET /prm") {
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{metadata}",
                        metadata.len()
                    )
                } else {
                    format!(
                        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: {challenge}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                };
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    format!("{base}/mcp")
}

async fn start_authorization_with(
    kind: DbKind,
    metadata: impl FnOnce(&str) -> String,
) -> tonic::Status {
    let url = protected_server(metadata).await;
    // Only the MCP server's own address is allowed.
    let mut h = start_with(kind, |config| config.outbound_allow = "127.0.0.1/32".into()).await;
    let token = admin("org-a");
    let auth = pb::auth_config::Method::OauthAuthorizationCode(pb::OAuthAuthorizationCodeAuth {
        redirect_uri: "https://app.example/callback".into(),
        ..Default::default()
    });
    let id = create(
        &mut h,
        &token,
        http_integration_with_auth("hostile", &url, Some(auth)),
    )
    .await
    .id;
    h.client
        .start_authorization(req(
            pb::StartAuthorizationRequest { integration_id: id },
            &token,
        ))
        .await
        .expect_err("the flow cannot start")
}

async fn oversized_resource_metadata_is_refused_at_the_bound(kind: DbKind) {
    let huge = |base: &str| {
        format!(
            r#"{{"resource": "{base}/mcp", "padding": "{}"}}"#,
            "a".repeat(256 * 1024)
        )
    };
    let status = start_authorization_with(kind, huge).await;
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(
        status.message().contains("larger than 64 KiB"),
        "{status:?}"
    );
}

async fn an_authorization_server_at_a_refused_address_is_not_dialled(kind: DbKind) {
    // A real server on an address outside the allow-list, counting connections.
    let refused = TcpListener::bind("127.0.0.2:0")
        .await
        .expect("bind 127.0.0.2");
    let refused_url = format!("http://{}", refused.local_addr().expect("addr"));
    let dialled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&dialled);
    tokio::spawn(async move {
        while refused.accept().await.is_ok() {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let metadata = move |base: &str| {
        format!(r#"{{"resource": "{base}/mcp", "authorization_servers": ["{refused_url}"]}}"#)
    };
    let status = start_authorization_with(kind, metadata).await;
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(
        status
            .message()
            .contains("outbound address policy refuses 127.0.0.2"),
        "{status:?}"
    );
    assert_eq!(
        dialled.load(Ordering::SeqCst),
        0,
        "the refused address was dialled"
    );
}

db_tests!(
    oversized_resource_metadata_is_refused_at_the_bound,
    an_authorization_server_at_a_refused_address_is_not_dialled,
);
