//! A team's own services behind each member's own account (OAuth
//! authorization code with PKCE): an OpenAPI and a gRPC integration name
//! their authorization server (nothing is learnt from the service), a
//! member's call is answered with the URL to connect, and once connected
//! each call carries that member's token, asked for the service's own URL;
//! another member connects on their own.

use serde_json::{Value, json};
use switchboard_example_mcp_server::{HttpServerOptions, OAuthRealm, spawn_http};
use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{self as pb, auth_config::Method, transport::Kind},
};
use switchboard_test_support::{DbKind, db_tests, spawn_example_api, spawn_example_grpc_service};

use crate::{
    oauth_users::{REDIRECT_URI, authorization_url, connect, user},
    support::{Harness, admin, bad_fields, create, req, start},
};

fn integration(slug: &str, kind: Kind, issuer: &str) -> pb::CreateIntegrationRequest {
    pb::CreateIntegrationRequest {
        display_name: slug.into(),
        slug: slug.into(),
        source: Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport { kind: Some(kind) }),
                auth: Some(pb::AuthConfig {
                    method: Some(Method::OauthAuthorizationCode(
                        pb::OAuthAuthorizationCodeAuth {
                            redirect_uri: REDIRECT_URI.into(),
                            issuer: issuer.into(),
                            ..Default::default()
                        },
                    )),
                }),
            },
        )),
        ..Default::default()
    }
}

async fn call(
    h: &mut Harness,
    id: &str,
    tool: &str,
    arguments: Value,
    name: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.into(),
                tool_name: tool.into(),
                arguments_json: arguments.to_string(),
                ..Default::default()
            },
            &user(name),
        ))
        .await
        .map(tonic::Response::into_inner)
}

async fn each_member_calls_a_service_with_their_own_token(kind: DbKind) {
    let realm = OAuthRealm::default();
    let _server = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("the authorization server");
    let api = spawn_example_api();
    let inventory = spawn_example_grpc_service();
    let mut h = start(kind).await;
    let pets = Kind::Openapi(pb::OpenApiTransport {
        base_url: api.base_url.clone(),
        document: api.document().await.to_string(),
        ..Default::default()
    });
    // Named, never learnt from the service.
    let status = h
        .client
        .create_integration(req(integration("x", pets.clone(), ""), &admin("org-a")))
        .await
        .expect_err("refused");
    assert_eq!(
        bad_fields(&status),
        ["custom.auth.oauth_authorization_code.issuer"]
    );
    let pets = create(
        &mut h,
        &admin("org-a"),
        integration("pets", pets, &realm.base()),
    )
    .await
    .id;
    let grpc = Kind::Grpc(pb::GrpcTransport {
        target: inventory.url.clone(),
        ..Default::default()
    });
    let grpc = create(
        &mut h,
        &admin("org-a"),
        integration("inv", grpc, &realm.base()),
    )
    .await
    .id;

    let refused = call(&mut h, &pets, "getPet", json!({"id": 7}), "alice")
        .await
        .expect_err("alice has not connected");
    let url = authorization_url(&refused);
    assert!(url.starts_with(&realm.base()), "{url}");
    assert!(api.last_seen().await.is_none(), "nothing reached the API");
    connect(&mut h, &url, "alice").await;
    let pet = call(&mut h, &pets, "getPet", json!({"id": 7}), "alice")
        .await
        .expect("alice calls");
    assert!(!pet.is_error, "{pet:?}");
    let alice_token = api.last_seen().await.expect("seen")["authorization"].clone();
    let issued = realm.issued_tokens();
    assert!(
        issued.iter().any(|t| alice_token == format!("Bearer {t}")),
        "{alice_token} {issued:?}"
    );
    let code_exchange = realm
        .token_requests()
        .into_iter()
        .find(|r| r.form.get("grant_type").map(String::as_str) == Some("authorization_code"))
        .expect("the code exchanged");
    assert_eq!(code_exchange.form["resource"], api.base_url, "for the API");

    // Bob connects his own account; his calls carry his token.
    let refused = call(&mut h, &pets, "getPet", json!({"id": 8}), "bob")
        .await
        .expect_err("bob has not connected");
    connect(&mut h, &authorization_url(&refused), "bob").await;
    call(&mut h, &pets, "getPet", json!({"id": 8}), "bob")
        .await
        .expect("bob calls");
    let bob_token = api.last_seen().await.expect("seen")["authorization"].clone();
    assert_ne!(bob_token, alice_token);

    // A gRPC service alike.
    let refused = call(
        &mut h,
        &grpc,
        "Inventory_GetItem",
        json!({"id": "1"}),
        "alice",
    )
    .await
    .expect_err("alice has not connected the service");
    connect(&mut h, &authorization_url(&refused), "alice").await;
    call(
        &mut h,
        &grpc,
        "Inventory_GetItem",
        json!({"id": "1"}),
        "alice",
    )
    .await
    .expect("alice calls the service");
    let seen = call(&mut h, &grpc, "Inventory_LastCall", json!({}), "alice")
        .await
        .expect("answered");
    let seen = struct_to_json(seen.structured_content.as_ref().expect("structured"));
    let issued = realm.issued_tokens();
    assert!(
        issued
            .iter()
            .any(|t| seen["authorization"] == format!("Bearer {t}")),
        "{seen}"
    );
}

db_tests!(each_member_calls_a_service_with_their_own_token);
