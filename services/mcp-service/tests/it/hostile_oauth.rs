//! Hostile OAuth token endpoints: one that never answers, one that answers
//! without end, one that claims a token lives forever. Each test fails on a
//! token cache that fetches under one process-wide lock, reads bodies
//! without a limit or adds the claimed lifetime to the clock unchecked.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, auth_config::Method},
};
use switchboard_test_support::http_integration_with_auth;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::Notify,
};

use crate::support::{Harness, admin, create, req, start_with};

/// How a fake token endpoint answers.
#[derive(Clone)]
enum Answer {
    /// Takes the request and never answers.
    Hang(Arc<Notify>),
    /// Answers 200 with this JSON body.
    Json(String),
}

/// Reads one HTTP request (headers and a `Content-Length` body).
async fn read_request(stream: &mut TcpStream) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Ok(n) = stream.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return;
            }
        }
    }
}

/// A token endpoint on loopback; its URL.
async fn token_endpoint(answer: Answer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bound");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                read_request(&mut stream).await;
                match answer {
                    Answer::Hang(arrived) => {
                        arrived.notify_one();
                        // Held open, unanswered, until the test ends.
                        std::future::pending::<()>().await;
                    }
                    Answer::Json(body) => {
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = stream.write_all(head.as_bytes()).await;
                        let _ = stream.write_all(body.as_bytes()).await;
                    }
                }
            });
        }
    });
    format!("http://{addr}/token")
}

fn oauth(token_url: &str) -> Method {
    Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        token_url: token_url.to_owned(),
        client_id: "client".into(),
        client_secret: "secret".into(),
        ..Default::default()
    })
}

async fn oauth_integration(
    h: &mut Harness,
    org: &str,
    mcp_url: &str,
    token_url: &str,
    connect_timeout: Option<Duration>,
) -> String {
    let mut request = http_integration_with_auth("example", mcp_url, Some(oauth(token_url)));
    request.timeouts = connect_timeout.map(|t| pb::Timeouts {
        connect: Some(prost_types::Duration {
            seconds: i64::try_from(t.as_secs()).expect("small"),
            nanos: 0,
        }),
        call: None,
    });
    create(h, &admin(org), request).await.id
}

fn echo(id: &str, org: &str) -> tonic::Request<pb::ExecuteToolRequest> {
    req(
        pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: "echo".into(),
            arguments: json_to_struct(&json!({"text": "hi"})),
            session_scope: String::new(),
            arguments_json: String::new(),
            ..Default::default()
        },
        &admin(org),
    )
}

#[tokio::test]
async fn a_slow_token_endpoint_of_one_organization_does_not_delay_another() {
    let mcp = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let arrived = Arc::new(Notify::new());
    let slow = token_endpoint(Answer::Hang(arrived.clone())).await;
    let fast = token_endpoint(Answer::Json(
        json!({"access_token": "t", "expires_in": 3600}).to_string(),
    ))
    .await;
    let mut h = start_with(switchboard_test_support::DbKind::Sqlite, |_| {}).await;
    // Org A's connection may wait a long time for its token.
    let a = oauth_integration(
        &mut h,
        "org-a",
        &mcp.url(),
        &slow,
        Some(Duration::from_secs(60)),
    )
    .await;
    let b = oauth_integration(&mut h, "org-b", &mcp.url(), &fast, None).await;

    let mut client = h.client.clone();
    let stalled = tokio::spawn(async move { client.execute_tool(echo(&a, "org-a")).await });
    tokio::time::timeout(Duration::from_secs(20), arrived.notified())
        .await
        .expect("org A's token request reached its endpoint");

    let answered = tokio::time::timeout(
        Duration::from_secs(30),
        h.client.execute_tool(echo(&b, "org-b")),
    )
    .await
    .expect("org B's call is not held behind org A's token fetch")
    .expect("answered")
    .into_inner();
    assert!(!answered.is_error, "{}", answered.error_message);
    assert!(
        !stalled.is_finished(),
        "org A's token endpoint is still held open"
    );
    stalled.abort();
}

#[tokio::test]
async fn an_oversized_token_response_is_refused() {
    let mcp = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let huge = json!({"access_token": "x".repeat(1024 * 1024)}).to_string();
    let endpoint = token_endpoint(Answer::Json(huge)).await;
    let mut h = start_with(switchboard_test_support::DbKind::Sqlite, |_| {}).await;
    let id = oauth_integration(&mut h, "org-a", &mcp.url(), &endpoint, None).await;
    let response = h
        .client
        .execute_tool(echo(&id, "org-a"))
        .await
        .expect("answered")
        .into_inner();
    assert!(response.is_error);
    assert!(
        response.error_message.contains("larger than 64 KiB"),
        "{}",
        response.error_message
    );
    assert_eq!(mcp.stats.snapshot().tool_calls, 0);
}

#[tokio::test]
async fn a_huge_expires_in_is_clamped_not_a_panic() {
    let mcp = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let endpoint = token_endpoint(Answer::Json(
        json!({"access_token": "t", "expires_in": u64::MAX}).to_string(),
    ))
    .await;
    let mut h = start_with(switchboard_test_support::DbKind::Sqlite, |_| {}).await;
    let id = oauth_integration(&mut h, "org-a", &mcp.url(), &endpoint, None).await;
    for _ in 0..2 {
        let response = h
            .client
            .execute_tool(echo(&id, "org-a"))
            .await
            .expect("answered")
            .into_inner();
        assert!(!response.is_error, "{}", response.error_message);
    }
}

#[tokio::test]
async fn a_refused_client_credentials_token_is_replaced_once() {
    let realm = switchboard_example_mcp_server::OAuthRealm::default();
    let mcp = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let token_url = format!(
        "{}/token",
        mcp.url()
            .trim_end_matches(switchboard_example_mcp_server::MCP_PATH)
    );
    let mut h = start_with(switchboard_test_support::DbKind::Sqlite, |_| {}).await;
    let id = oauth_integration(&mut h, "org-a", &mcp.url(), &token_url, None).await;
    let first = h
        .client
        .execute_tool(echo(&id, "org-a"))
        .await
        .expect("answered")
        .into_inner();
    assert!(!first.is_error, "{}", first.error_message);
    // The provider revokes the token long before its stated hour is up.
    realm.revoke("client");
    let second = h
        .client
        .execute_tool(echo(&id, "org-a"))
        .await
        .expect("answered")
        .into_inner();
    assert!(!second.is_error, "{}", second.error_message);
    assert_eq!(
        realm.token_credentials().len(),
        2,
        "one fresh token fetched"
    );
    assert_eq!(
        realm.calls(),
        ["client", "client"].repeat(realm.calls().len() / 2)
    );
}
