//! Hostile MCP servers and authorization servers against the OAuth
//! authorization code flow: a server naming its own authorization server to
//! catch the admin's client secret, a `javascript:` authorization endpoint,
//! plain `http` endpoints, a flood of unauthorized calls, and two replicas
//! refreshing one grant against rotating refresh tokens.

use std::time::Duration;

use serde_json::json;
use switchboard_example_mcp_server::{
    HttpServerOptions, MCP_PATH, OAuthRealm, RunningHttpServer, spawn_http,
};
use switchboard_mcp_service::Config;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, auth_config::Method, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{DbKind, TEST_JWT_SECRET, TestDb, db_tests, token};
use tonic::{Code, transport::Channel};
use tonic_types::StatusExt as _;

use crate::{
    oauth_users::{REDIRECT_URI, sign_in},
    support::{Harness, admin, bad_fields, create, http_integration_with_auth, req, start},
};

fn user(name: &str) -> String {
    token("org-a", name, &["member"])
}

async fn realm_server() -> (OAuthRealm, RunningHttpServer) {
    let realm = OAuthRealm::default();
    let server = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    (realm, server)
}

fn code_flow(auth: pb::OAuthAuthorizationCodeAuth) -> Option<Method> {
    Some(Method::OauthAuthorizationCode(
        pb::OAuthAuthorizationCodeAuth {
            redirect_uri: REDIRECT_URI.into(),
            ..auth
        },
    ))
}

async fn echo(
    client: &mut McpServiceClient<Channel>,
    id: &str,
    as_user: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "hi"})),
                ..Default::default()
            },
            &user(as_user),
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// The authorization URL a refused call hands out, if it hands one out.
fn handed_out_url(status: &tonic::Status) -> Option<String> {
    status
        .get_error_details()
        .error_info()
        .and_then(|info| info.metadata.get("authorization_url").cloned())
}

async fn complete(client: &mut McpServiceClient<Channel>, url: &str, name: &str) {
    let (state, code, iss) = sign_in(url, name).await;
    client
        .complete_authorization(req(
            pb::CompleteAuthorizationRequest { state, code, iss },
            &user(name),
        ))
        .await
        .expect("authorization completes");
}

#[tokio::test]
async fn a_server_naming_a_foreign_authorization_server_gets_no_client_secret() {
    // The admin registered the client at their provider; the MCP server
    // names its own authorization server instead.
    let (_provider, provider_server) = realm_server().await;
    let (hostile, hostile_server) = realm_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let auth = code_flow(pb::OAuthAuthorizationCodeAuth {
        client_id: "pre-registered".into(),
        client_secret: "the-admins-secret".into(),
        issuer: provider_server.url().trim_end_matches(MCP_PATH).to_owned(),
        ..Default::default()
    });
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &hostile_server.url(), auth),
    )
    .await
    .id;

    let refused = echo(&mut h.client, &id, "alice")
        .await
        .expect_err("no authorization yet");
    // Whatever the flow hands out, the user follows it to the end.
    if let Some(url) = handed_out_url(&refused) {
        let (state, code, iss) = sign_in(&url, "alice").await;
        let _ = h
            .client
            .complete_authorization(req(
                pb::CompleteAuthorizationRequest { state, code, iss },
                &user("alice"),
            ))
            .await;
    }
    assert!(
        hostile.token_credentials().is_empty(),
        "the hostile token endpoint received client credentials: {:?}",
        hostile.token_credentials()
    );
    assert!(
        refused.message().contains("no secret is sent"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_javascript_authorization_endpoint_is_never_handed_out() {
    let (realm, server) = realm_server().await;
    realm.set_metadata(
        "authorization_endpoint",
        json!("javascript:alert(document.domain)//"),
    );
    let mut h = start(DbKind::Sqlite).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &server.url(), code_flow(Default::default())),
    )
    .await
    .id;
    let refused = echo(&mut h.client, &id, "alice")
        .await
        .expect_err("no authorization yet");
    assert_eq!(handed_out_url(&refused), None, "{refused:?}");
    assert!(!refused.message().contains("javascript:"), "{refused:?}");
    assert!(refused.message().contains("https"), "{refused:?}");
}

#[tokio::test]
async fn plain_http_off_loopback_is_refused_for_redirects_and_endpoints() {
    let (realm, server) = realm_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let plain = Some(Method::OauthAuthorizationCode(
        pb::OAuthAuthorizationCodeAuth {
            redirect_uri: "http://app.example/oauth/callback".into(),
            ..Default::default()
        },
    ));
    let status = h
        .client
        .create_integration(req(
            http_integration_with_auth("plain", &server.url(), plain),
            &admin("org-a"),
        ))
        .await
        .expect_err("a plain http redirect URI is refused");
    assert_eq!(
        bad_fields(&status),
        ["custom.auth.oauth_authorization_code.redirect_uri"]
    );

    realm.set_metadata("token_endpoint", json!("http://auth.example/token"));
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &server.url(), code_flow(Default::default())),
    )
    .await
    .id;
    let refused = echo(&mut h.client, &id, "alice")
        .await
        .expect_err("no authorization yet");
    assert_eq!(handed_out_url(&refused), None, "{refused:?}");
    assert!(refused.message().contains("token endpoint"), "{refused:?}");
}

async fn thirty_calls_make_one_registration_and_one_pending_flow(kind: DbKind) {
    let (realm, server) = realm_server().await;
    let mut h = start(kind).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &server.url(), code_flow(Default::default())),
    )
    .await
    .id;
    let calls = (0..30).map(|_| {
        let mut client = h.client.clone();
        let id = id.clone();
        async move { echo(&mut client, &id, "alice").await }
    });
    let mut urls = Vec::new();
    for result in futures::future::join_all(calls).await {
        let refused = result.expect_err("no authorization yet");
        assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
        urls.push(handed_out_url(&refused).expect("an authorization URL"));
    }
    urls.dedup();
    assert_eq!(urls.len(), 1, "one flow handed out: {urls:?}");
    // Another user of the integration reuses its registered client.
    let bob = echo(&mut h.client, &id, "bob").await.expect_err("bob too");
    assert!(handed_out_url(&bob).is_some(), "{bob:?}");
    assert_eq!(realm.registrations(), 1);
    let pool = sqlx::AnyPool::connect(&h.db.url).await.expect("raw access");
    let rows: Vec<(String,)> = sqlx::query_as("SELECT user_id FROM oauth_pending ORDER BY user_id")
        .fetch_all(&pool)
        .await
        .expect("rows");
    assert_eq!(rows, [("alice".to_owned(),), ("bob".to_owned(),)]);
    // The flow handed out still completes.
    complete(&mut h.client, &urls[0], "alice").await;
    echo(&mut h.client, &id, "alice")
        .await
        .expect("alice is connected");
}

/// A second mcp-service on the same database with the same keys.
async fn second_replica(
    config: &Config,
) -> (switchboard_server::RunningServer, McpServiceClient<Channel>) {
    let server = switchboard_mcp_service::spawn(config.clone())
        .await
        .expect("the second replica starts");
    let client = McpServiceClient::connect(server.url())
        .await
        .expect("connects");
    (server, client)
}

async fn a_refresh_race_between_two_replicas_keeps_the_grant(kind: DbKind) {
    let (realm, server) = realm_server().await;
    realm.rotate_refresh_tokens();
    // Refreshed when less than half of it is left (5 s).
    realm.set_access_lifetime(10);
    let db = TestDb::new(kind).await.expect("a test database");
    let config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    let (_a, mut a) = second_replica(&config).await;
    let (_b, mut b) = second_replica(&config).await;
    let mut h = Harness {
        db,
        server: _a,
        client: a.clone(),
    };
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &server.url(), code_flow(Default::default())),
    )
    .await
    .id;
    let refused = echo(&mut a, &id, "alice").await.expect_err("not yet");
    complete(&mut a, &handed_out_url(&refused).expect("a URL"), "alice").await;

    // Both replicas find the token due and refresh it at once: one wins,
    // the other's (reused) refresh token is refused.
    tokio::time::sleep(Duration::from_millis(6_200)).await;
    realm.hold_refreshes(2);
    let (first, second) = tokio::join!(echo(&mut a, &id, "alice"), echo(&mut b, &id, "alice"));
    assert_eq!(realm.refused_refreshes(), 1, "the refreshes raced");
    for answer in [first, second] {
        let answer = answer.expect("the call goes through with the winner's tokens");
        assert!(!answer.is_error, "{}", answer.error_message);
    }
    for client in [&mut a, &mut b] {
        let answer = echo(client, &id, "alice").await.expect("still connected");
        assert!(!answer.is_error, "{}", answer.error_message);
    }
}

db_tests!(
    thirty_calls_make_one_registration_and_one_pending_flow,
    a_refresh_race_between_two_replicas_keeps_the_grant
);
