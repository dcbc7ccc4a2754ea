//! A team's own services behind OAuth client credentials: a gRPC and an
//! OpenAPI integration each carry a token the authorization server issued
//! for the service's own URL (its `resource`), fetched once and reused;
//! a DPoP-binding authorization server is refused with a clear error (these
//! calls carry no proof), before anything is sent to the service.

use serde_json::{Value, json};
use switchboard_example_mcp_server::{
    HttpServerOptions, OAuthRealm, RunningHttpServer, spawn_http,
};
use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{self as pb, auth_config::Method, transport::Kind},
};
use switchboard_test_support::{DbKind, db_tests, spawn_example_api, spawn_example_grpc_service};

use crate::support::{Harness, admin, create, req, start};

/// The example server's authorization server (its MCP side unused).
async fn authorization_server() -> (OAuthRealm, RunningHttpServer) {
    let realm = OAuthRealm::default();
    let server = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("the authorization server");
    (realm, server)
}

fn integration(slug: &str, kind: Kind, issuer: &str) -> pb::CreateIntegrationRequest {
    pb::CreateIntegrationRequest {
        display_name: slug.into(),
        slug: slug.into(),
        source: Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport { kind: Some(kind) }),
                auth: Some(pb::AuthConfig {
                    method: Some(Method::OauthClientCredentials(
                        pb::OAuthClientCredentialsAuth {
                            client_id: "svc-client".into(),
                            client_secret: "svc-secret".into(),
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

async fn call(h: &mut Harness, id: &str, tool: &str, arguments: Value) -> pb::ExecuteToolResponse {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.into(),
                tool_name: tool.into(),
                arguments_json: arguments.to_string(),
                ..Default::default()
            },
            &admin("org-a"),
        ))
        .await
        .expect("answered")
        .into_inner()
}

async fn grpc_and_openapi_calls_carry_a_client_credentials_token(kind: DbKind) {
    let (realm, server) = authorization_server().await;
    let issuer = realm.base();
    let inventory = spawn_example_grpc_service();
    let api = spawn_example_api();
    let mut h = start(kind).await;
    let grpc = Kind::Grpc(pb::GrpcTransport {
        target: inventory.url.clone(),
        ..Default::default()
    });
    let grpc = create(
        &mut h,
        &admin("org-a"),
        integration("inventory", grpc, &issuer),
    )
    .await
    .id;
    let openapi = Kind::Openapi(pb::OpenApiTransport {
        base_url: api.base_url.clone(),
        document: api.document().await.to_string(),
        document_url: String::new(),
        operations: Vec::new(),
    });
    let openapi = create(
        &mut h,
        &admin("org-a"),
        integration("pets", openapi, &issuer),
    )
    .await
    .id;

    for _ in 0..2 {
        let item = call(
            &mut h,
            &grpc,
            "Inventory_GetItem",
            json!({"id": "9007199254740993"}),
        )
        .await;
        assert!(!item.is_error, "{item:?}");
    }
    let seen = call(&mut h, &grpc, "Inventory_LastCall", json!({})).await;
    let seen = struct_to_json(seen.structured_content.as_ref().expect("structured"));
    let pet = call(&mut h, &openapi, "getPet", json!({"id": 7})).await;
    assert!(!pet.is_error, "{pet:?}");

    let issued = realm.issued_tokens();
    let bearer = |seen: &str| issued.iter().any(|t| seen == format!("Bearer {t}"));
    assert!(
        bearer(seen["authorization"].as_str().unwrap_or_default()),
        "{seen} {issued:?}"
    );
    let api_seen = api.last_seen().await.expect("the API was called");
    assert!(
        bearer(api_seen["authorization"].as_str().unwrap_or_default()),
        "{api_seen}"
    );
    let resources: Vec<String> = realm
        .token_requests()
        .iter()
        .map(|r| r.form["resource"].clone())
        .collect();
    assert_eq!(
        resources,
        [inventory.url.clone(), api.base_url.clone()],
        "one token per integration, for the service it is sent to"
    );
    drop(server);
}

async fn a_dpop_binding_authorization_server_is_refused_before_the_call(kind: DbKind) {
    let (realm, _server) = authorization_server().await;
    realm.require_dpop(false);
    let inventory = spawn_example_grpc_service();
    let mut h = start(kind).await;
    let grpc = Kind::Grpc(pb::GrpcTransport {
        target: inventory.url.clone(),
        ..Default::default()
    });
    let grpc = create(
        &mut h,
        &admin("org-a"),
        integration("inventory", grpc, &realm.base()),
    )
    .await
    .id;
    let refused = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: grpc.clone(),
                tool_name: "Inventory_GetItem".into(),
                arguments_json: r#"{"id":"1"}"#.into(),
                ..Default::default()
            },
            &admin("org-a"),
        ))
        .await;
    let message = match refused {
        Ok(answer) => answer.into_inner().error_message,
        Err(status) => status.message().to_owned(),
    };
    assert!(message.contains("DPoP"), "{message}");
    let seen = call(&mut h, &grpc, "Inventory_LastCall", json!({})).await;
    assert!(
        seen.error_message.contains("DPoP"),
        "every call is refused alike: {seen:?}"
    );
}

db_tests!(
    grpc_and_openapi_calls_carry_a_client_credentials_token,
    a_dpop_binding_authorization_server_is_refused_before_the_call,
);
