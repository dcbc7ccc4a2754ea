//! OAuth authorization code, organization-wide: an admin connects the
//! integration once, and every member's calls carry that connection's
//! token; members cannot make or replace it.

use serde_json::json;
use sqlx::Row as _;
use switchboard_example_mcp_server::{HttpServerOptions, OAuthRealm, spawn_http};
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests, token};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::{
    oauth_users::{REDIRECT_URI, authorization_url, sign_in, user},
    support::{Harness, admin, create, http_integration_with_auth, req, start},
};

fn carol() -> String {
    token("org-a", "carol", &["admin"])
}

async fn echo(
    h: &Harness,
    id: &str,
    token: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
        .clone()
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "hi"})),
                ..Default::default()
            },
            token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// A refusal that names no URL: only an admin can connect.
fn assert_an_admin_must_connect(status: &tonic::Status) {
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    let details = status.get_error_details();
    let info = details.error_info().expect("an ErrorInfo");
    assert_eq!(info.reason, "ERROR_REASON_AUTHORIZATION_REQUIRED");
    assert!(!info.metadata.contains_key("authorization_url"), "{info:?}");
    assert!(status.message().contains("admin"), "{status:?}");
}

async fn an_organization_wide_connection_is_made_by_an_admin_and_used_by_every_member(
    kind: DbKind,
) {
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
        organization_wide: true,
        ..Default::default()
    });
    let created = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("provider", &upstream.url(), Some(auth)),
    )
    .await;
    let id = created.id;
    let Some(pb::auth_config::Method::OauthAuthorizationCode(shown)) =
        created.auth.and_then(|auth| auth.method)
    else {
        panic!("the auth method is kept");
    };
    assert!(shown.organization_wide);

    // Nobody has connected it: a member is told an admin must, and cannot
    // start it themselves.
    assert_an_admin_must_connect(
        &echo(&h, &id, &user("alice"))
            .await
            .expect_err("unconnected"),
    );
    let denied = h
        .client
        .clone()
        .start_authorization(req(
            pb::StartAuthorizationRequest {
                integration_id: id.clone(),
            },
            &user("alice"),
        ))
        .await
        .expect_err("a member cannot connect it");
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");

    // An admin's call says where to connect; the admin signs in once.
    let url = authorization_url(&echo(&h, &id, &carol()).await.expect_err("unconnected"));
    let (state, code, iss) = sign_in(&url, "carol").await;
    h.client
        .clone()
        .complete_authorization(req(
            pb::CompleteAuthorizationRequest { state, code, iss },
            &carol(),
        ))
        .await
        .expect("the admin completes");

    // Every member's call carries the organization's connection.
    for member in ["alice", "bob"] {
        let answered = echo(&h, &id, &user(member)).await.expect("a member calls");
        assert!(!answered.is_error, "{answered:?}");
        assert_eq!(realm.calls().last().map(String::as_str), Some("carol"));
    }
    let pool = sqlx::AnyPool::connect(&h.db.url).await.expect("raw access");
    let grants: i64 = sqlx::query("SELECT COUNT(*) AS n FROM oauth_grants")
        .fetch_one(&pool)
        .await
        .expect("count")
        .try_get("n")
        .expect("a count");
    assert_eq!(grants, 1, "one grant for the organization");
    pool.close().await;

    // Revoked at the provider: members are back to asking an admin.
    realm.revoke("carol");
    assert_an_admin_must_connect(&echo(&h, &id, &user("bob")).await.expect_err("revoked"));
}

db_tests!(an_organization_wide_connection_is_made_by_an_admin_and_used_by_every_member);
