//! OAuth authorization code per user, end to end: a real authorization
//! server and MCP server (the example server's), two users of one
//! organization each connecting their own account, a revoked grant leading
//! back to authorization, and no token in a response, a row or a log.

use serde_json::json;
use sqlx::Row as _;
use switchboard_example_mcp_server::{HttpServerOptions, OAuthRealm, spawn_http};
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests, logs, token};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::support::{Harness, admin, create, http_integration_with_auth, req, start};

pub(crate) const REDIRECT_URI: &str = "https://app.example/oauth/callback";

pub(crate) fn user(name: &str) -> String {
    token("org-a", name, &["member"])
}

async fn echo(
    h: &mut Harness,
    id: &str,
    as_user: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
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

/// The authorization URL a refused call carries, asserting how it is refused.
pub(crate) fn authorization_url(status: &tonic::Status) -> String {
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    let details = status.get_error_details();
    let info = details.error_info().expect("an ErrorInfo");
    assert_eq!(info.reason, "ERROR_REASON_AUTHORIZATION_REQUIRED");
    info.metadata
        .get("authorization_url")
        .cloned()
        .expect("the authorization URL")
}

/// What the user's browser does: signs in as `name` at the authorization
/// server, which redirects to the application with `code` and `state`.
pub(crate) async fn sign_in(url: &str, name: &str) -> (String, String, String) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let response = browser
        .get(format!("{url}&user={name}"))
        .send()
        .await
        .expect("the authorization server answers");
    let location = response.headers()[reqwest::header::LOCATION]
        .to_str()
        .expect("a location");
    assert!(location.starts_with(REDIRECT_URI), "{location}");
    let callback = url::Url::parse(location).expect("a URL");
    let param = |key: &str| {
        callback
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    (param("state"), param("code"), param("iss"))
}

pub(crate) async fn connect(h: &mut Harness, url: &str, name: &str) {
    let (state, code, iss) = sign_in(url, name).await;
    h.client
        .complete_authorization(req(
            pb::CompleteAuthorizationRequest { state, code, iss },
            &user(name),
        ))
        .await
        .expect("authorization completes");
}

async fn two_users_each_call_with_their_own_token_and_a_revoked_grant_asks_again(kind: DbKind) {
    logs::capture();
    let realm = OAuthRealm::default();
    let upstream = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start(kind).await;
    let auth = pb::auth_config::Method::OauthAuthorizationCode(pb::OAuthAuthorizationCodeAuth {
        redirect_uri: REDIRECT_URI.into(),
        ..Default::default()
    });
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &upstream.url(), Some(auth)),
    )
    .await
    .id;
    let mut seen = Vec::new();

    // Alice has not connected: the call says where to.
    let refused = echo(&mut h, &id, "alice")
        .await
        .expect_err("needs authorization");
    seen.push(format!("{refused:?}"));
    let alice_url = authorization_url(&refused);
    // Bob cannot complete Alice's authorization.
    let (state, code, iss) = sign_in(&alice_url, "alice").await;
    let stolen = h
        .client
        .complete_authorization(req(
            pb::CompleteAuthorizationRequest {
                state: state.clone(),
                code: code.clone(),
                iss: iss.clone(),
            },
            &user("bob"),
        ))
        .await
        .expect_err("another user's state");
    assert_eq!(stolen.code(), Code::NotFound, "{stolen:?}");
    let completed = h
        .client
        .complete_authorization(req(
            pb::CompleteAuthorizationRequest { state, code, iss },
            &user("alice"),
        ))
        .await
        .expect("alice completes")
        .into_inner();
    assert_eq!(completed.integration_id, id);
    seen.push(format!("{completed:?}"));
    let answered = echo(&mut h, &id, "alice").await.expect("alice calls");
    assert!(!answered.is_error, "{answered:?}");
    seen.push(format!("{answered:?}"));
    assert_eq!(realm.calls().last().map(String::as_str), Some("alice"));

    // Bob connects his own account; each call carries its caller's token.
    let bob_url = authorization_url(&echo(&mut h, &id, "bob").await.expect_err("bob too"));
    connect(&mut h, &bob_url, "bob").await;
    echo(&mut h, &id, "bob").await.expect("bob calls");
    assert_eq!(realm.calls().last().map(String::as_str), Some("bob"));
    echo(&mut h, &id, "alice").await.expect("alice again");
    assert_eq!(realm.calls().last().map(String::as_str), Some("alice"));

    // An access token that ended is refreshed without the user.
    realm.expire_access("alice");
    echo(&mut h, &id, "alice").await.expect("refreshed");
    assert_eq!(realm.calls().last().map(String::as_str), Some("alice"));

    // Alice revokes the grant at the provider: back to authorization.
    realm.revoke("alice");
    let again = echo(&mut h, &id, "alice").await.expect_err("revoked");
    seen.push(format!("{again:?}"));
    let url = authorization_url(&again);
    connect(&mut h, &url, "alice").await;
    echo(&mut h, &id, "alice").await.expect("alice reconnected");
    echo(&mut h, &id, "bob").await.expect("bob unaffected");

    let tokens = realm.issued_tokens();
    assert!(tokens.len() >= 8, "{tokens:?}");
    let pool = sqlx::AnyPool::connect(&h.db.url).await.expect("raw access");
    let mut stored = Vec::new();
    for row in sqlx::query("SELECT ciphertext FROM oauth_grants")
        .fetch_all(&pool)
        .await
        .expect("grants")
    {
        stored.push(row.try_get::<Vec<u8>, _>("ciphertext").expect("sealed"));
    }
    assert_eq!(stored.len(), 2, "one grant per user");
    pool.close().await;
    let logged = logs::captured();
    h.client
        .delete_integration(req(
            pb::DeleteIntegrationRequest { id: id.clone() },
            &admin("org-a"),
        ))
        .await
        .expect("deleted");
    let pool = sqlx::AnyPool::connect(&h.db.url).await.expect("raw access");
    let left: i64 = sqlx::query("SELECT COUNT(*) AS n FROM oauth_grants")
        .fetch_one(&pool)
        .await
        .expect("count")
        .try_get("n")
        .expect("a count");
    assert_eq!(left, 0, "grants go with their integration");
    pool.close().await;
    for token in &tokens {
        assert!(
            !stored
                .iter()
                .any(|s| s.windows(token.len()).any(|w| w == token.as_bytes())),
            "a row holds a token"
        );
        assert!(
            !seen.iter().any(|s| s.contains(token.as_str())),
            "a response holds a token"
        );
        assert!(!logged.contains(token.as_str()), "a log line holds a token");
    }
}

db_tests!(two_users_each_call_with_their_own_token_and_a_revoked_grant_asks_again);
