//! Hostile configuration by an organization admin: credentials that would
//! follow a changed destination or a redirect to another origin, and
//! credentials written into URLs.

use std::sync::{Arc, Mutex};

use switchboard_proto::mcp::v1::{self as pb, auth_config::Method};
use switchboard_test_support::{DbKind, db_tests};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::support::{
    Harness, admin, bad_fields, create, http_integration, http_integration_with_auth, member, req,
    start, validate,
};

const URL: &str = "http://127.0.0.1:9/mcp";
/// Another origin: loopback is allow-listed in tests, so this passes the
/// address policy.
const OTHER_URL: &str = "http://127.0.0.2:9/mcp";

fn mask(paths: &[&str]) -> Option<prost_types::FieldMask> {
    Some(prost_types::FieldMask {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    })
}

fn bearer(token: &str) -> Method {
    Method::BearerToken(pb::BearerTokenAuth {
        token: token.into(),
        token_set: false,
    })
}

fn header(value: &str) -> Method {
    Method::Header(pb::HeaderAuth {
        header_name: "X-Api-Key".into(),
        value: value.into(),
        value_set: false,
    })
}

fn oauth(token_url: &str, secret: &str) -> Method {
    Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        token_url: token_url.into(),
        client_id: "client".into(),
        client_secret: secret.into(),
        client_secret_set: false,
        scopes: vec![],
        ..Default::default()
    })
}

async fn get(h: &mut Harness, id: &str) -> pb::Integration {
    h.client
        .get_integration(req(
            pb::GetIntegrationRequest { id: id.into() },
            &admin("org-a"),
        ))
        .await
        .expect("found")
        .into_inner()
        .integration
        .expect("an integration")
}

async fn update(
    h: &mut Harness,
    integration: pb::Integration,
    paths: &[&str],
) -> Result<pb::Integration, tonic::Status> {
    h.client
        .update_integration(req(
            pb::UpdateIntegrationRequest {
                integration: Some(integration),
                update_mask: mask(paths),
            },
            &admin("org-a"),
        ))
        .await
        .map(|r| r.into_inner().integration.expect("an integration"))
}

fn http_transport(url: &str) -> Option<pb::Transport> {
    Some(pb::Transport {
        kind: Some(pb::transport::Kind::StreamableHttp(
            pb::StreamableHttpTransport { url: url.into() },
        )),
    })
}

fn url_of(integration: &pb::Integration) -> String {
    match integration.transport.as_ref().and_then(|t| t.kind.as_ref()) {
        Some(pb::transport::Kind::StreamableHttp(http)) => http.url.clone(),
        other => panic!("expected streamable HTTP, got {other:?}"),
    }
}

/// Creates an HTTP integration at [`URL`] with `auth`, then moves it to
/// [`OTHER_URL`] without re-entering its secret: refused, naming `field`,
/// and nothing changes. Re-entering the secret makes the same move work.
async fn moving_keeps_no_secret(h: &mut Harness, slug: &str, auth: Method, field: &str) {
    let created = create(
        h,
        &admin("org-a"),
        http_integration_with_auth(slug, URL, Some(auth.clone())),
    )
    .await;
    let mut moved = get(h, &created.id).await;
    moved.transport = http_transport(OTHER_URL);
    let status = update(h, moved.clone(), &["transport"])
        .await
        .expect_err("a new destination without the secret");
    assert_eq!(bad_fields(&status), [field], "{slug}");
    assert_eq!(url_of(&get(h, &created.id).await), URL, "nothing changed");

    // A different path on the same origin is the same destination.
    moved.transport = http_transport("http://127.0.0.1:9/v2/mcp");
    update(h, moved.clone(), &["transport"])
        .await
        .expect("the same origin keeps its secrets");

    moved.transport = http_transport(OTHER_URL);
    moved.auth = Some(pb::AuthConfig { method: Some(auth) });
    let updated = update(h, moved, &["transport", "auth"])
        .await
        .expect("the secret entered again");
    assert_eq!(url_of(&updated), OTHER_URL);
}

async fn a_changed_destination_without_reentered_secrets_is_invalid_argument(kind: DbKind) {
    let mut h = start(kind).await;
    moving_keeps_no_secret(
        &mut h,
        "bearer",
        bearer("b34r3r"),
        "integration.auth.bearer_token.token",
    )
    .await;
    moving_keeps_no_secret(
        &mut h,
        "header",
        header("h34d3r"),
        "integration.auth.header.value",
    )
    .await;
    moving_keeps_no_secret(
        &mut h,
        "oauth",
        oauth("http://127.0.0.1:9/token", "cl13nt"),
        "integration.auth.oauth_client_credentials.client_secret",
    )
    .await;

    // Only the token endpoint moves: the client secret would go there.
    let created = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("token", URL, Some(oauth("http://127.0.0.1:9/token", "s"))),
    )
    .await;
    let mut moved = get(&mut h, &created.id).await;
    moved.auth = Some(pb::AuthConfig {
        method: Some(oauth("http://127.0.0.2:9/token", "")),
    });
    let status = update(&mut h, moved, &["auth"])
        .await
        .expect_err("a new token endpoint without the client secret");
    assert_eq!(
        bad_fields(&status),
        ["integration.auth.oauth_client_credentials.client_secret"]
    );
}

/// Every request's head (request line and headers) a server received.
type Received = Arc<Mutex<Vec<String>>>;

/// A raw HTTP server on loopback answering every request with `response`,
/// recording what it received.
async fn http_server(response: String) -> (u16, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let received = Received::default();
    let log = received.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let log = log.clone();
            let response = response.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65_536 {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                log.lock()
                    .expect("log")
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, received)
}

async fn a_redirect_to_another_origin_carries_no_credential(kind: DbKind) {
    let (target, received) = http_server(
        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
    )
    .await;
    // `localhost` and another port: another origin on the same machine.
    let (redirector, _) = http_server(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://localhost:{target}/mcp\r\n\
         content-length: 0\r\nconnection: close\r\n\r\n"
    ))
    .await;
    let mut h = start(kind).await;
    let url = format!("http://127.0.0.1:{redirector}/mcp");
    for (slug, auth) in [
        ("header", header("h34d3r-canary")),
        ("bearer", bearer("b34r3r-canary")),
    ] {
        let id = create(
            &mut h,
            &admin("org-a"),
            http_integration_with_auth(slug, &url, Some(auth)),
        )
        .await
        .id;
        let report = validate(&mut h, &admin("org-a"), &id).await;
        for request in received.lock().expect("log").iter() {
            assert!(
                !request.contains("canary"),
                "a credential followed the redirect: {request}"
            );
        }
        assert!(!report.ok, "{slug}");
        // The handshake error shows reqwest's summary, not its source chain.
        assert!(
            report.error.contains("redirect"),
            "{slug}: {}",
            report.error
        );
    }
}

async fn credentials_in_urls_are_refused_naming_the_field(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    let cases = [
        (
            http_integration("tool", "http://user:hunter2@127.0.0.1:9/mcp"),
            "custom.transport.streamable_http.url",
        ),
        (
            http_integration("tool", "http://127.0.0.1:9/mcp?access_token=hunter2"),
            "custom.transport.streamable_http.url",
        ),
        (
            http_integration("tool", "http://127.0.0.1:9/mcp?region=eu&API_KEY=hunter2"),
            "custom.transport.streamable_http.url",
        ),
        (
            http_integration_with_auth(
                "tool",
                URL,
                Some(oauth("http://127.0.0.1:9/token?client_secret=hunter2", "s")),
            ),
            "custom.auth.oauth_client_credentials.token_url",
        ),
    ];
    for (request, field) in cases {
        let status = h
            .client
            .create_integration(req(request, &token))
            .await
            .expect_err("a credential in a URL");
        assert_eq!(bad_fields(&status), [field]);
        let details = status.get_error_details();
        let violation = &details
            .bad_request()
            .expect("a BadRequest")
            .field_violations[0];
        assert!(
            violation
                .description
                .contains("bearer token or custom header"),
            "{}",
            violation.description
        );
        assert!(!status.message().contains("hunter2"), "{status:?}");
        assert!(!violation.description.contains("hunter2"));
    }

    let created = create(&mut h, &token, http_integration("plain", URL)).await;
    let mut changed = get(&mut h, &created.id).await;
    changed.transport = http_transport("http://127.0.0.1:9/mcp?token=hunter2");
    let status = update(&mut h, changed, &["transport"])
        .await
        .expect_err("a credential in a URL");
    assert_eq!(
        bad_fields(&status),
        ["integration.transport.streamable_http.url"]
    );
    assert_eq!(url_of(&get(&mut h, &created.id).await), URL);
    assert_eq!(status.code(), Code::InvalidArgument);
}

/// A credential no name check recognises (in the path, or in a query name
/// such as `subscription-key`) is never shown to members: they see the
/// origin of each URL only, while the admin who entered it sees it whole.
async fn members_see_only_the_origin_of_an_integrations_urls(kind: DbKind) {
    let mut h = start(kind).await;
    let secret_url =
        "http://127.0.0.1:9/v1/sk-hunter2/mcp?subscription-key=hunter2&x-functions-key=hunter2";
    let token_url = "http://127.0.0.1:9/oauth/hunter2/token?access_key=hunter2";
    let created = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("keyed", secret_url, Some(oauth(token_url, "s"))),
    )
    .await;
    let full = get(&mut h, &created.id).await;
    assert_eq!(url_of(&full), secret_url, "the admin sees the whole URL");

    let as_member = h
        .client
        .get_integration(req(
            pb::GetIntegrationRequest {
                id: created.id.clone(),
            },
            &member("org-a"),
        ))
        .await
        .expect("found")
        .into_inner()
        .integration
        .expect("an integration");
    let listed = h
        .client
        .list_integrations(req(
            pb::ListIntegrationsRequest::default(),
            &member("org-a"),
        ))
        .await
        .expect("listed")
        .into_inner()
        .integrations;
    for shown in [&as_member, &listed[0]] {
        assert_eq!(url_of(shown), "http://127.0.0.1:9");
        assert!(!format!("{shown:?}").contains("hunter2"), "{shown:?}");
        match shown.auth.as_ref().and_then(|a| a.method.as_ref()) {
            Some(Method::OauthClientCredentials(oauth)) => {
                assert_eq!(oauth.token_url, "http://127.0.0.1:9");
            }
            other => panic!("expected client credentials, got {other:?}"),
        }
    }
}

db_tests!(
    a_changed_destination_without_reentered_secrets_is_invalid_argument,
    a_redirect_to_another_origin_carries_no_credential,
    credentials_in_urls_are_refused_naming_the_field,
    members_see_only_the_origin_of_an_integrations_urls,
);
