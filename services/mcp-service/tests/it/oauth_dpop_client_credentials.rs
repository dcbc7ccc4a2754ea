//! DPoP-bound tokens (RFC 9449) of OAuth client credentials, end to end
//! against the example server's authorization server and MCP endpoint
//! requiring them: the token request proves the integration's own key with
//! the server's nonce, the token is presented with proofs of that key and
//! never as a bearer token, and the key is the integration's, sealed with
//! its secrets: another integration proves another key, another replica the
//! same one.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use switchboard_example_mcp_server::{HttpServerOptions, OAuthRealm, spawn_http};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, auth_config::Method, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{DbKind, db_tests};
use tonic::transport::Channel;

use crate::support::{
    admin, create, http_integration_with_auth, pinned_to_origin, req, start_with,
};

db_tests!(a_client_credentials_token_is_bound_to_the_integrations_own_sealed_dpop_key);

/// The key both replicas seal and open the integrations' secrets with.
const SEALING_KEY: &str = "dpop:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

async fn echo(client: &mut McpServiceClient<Channel>, id: &str) -> pb::ExecuteToolResponse {
    client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "hi"})),
                ..Default::default()
            },
            &admin("org-a"),
        ))
        .await
        .expect("answered")
        .into_inner()
}

/// The public key (JWK) a DPoP proof names in its header.
fn proof_key(proof: &str) -> Value {
    let header = proof.split('.').next().expect("a JWT");
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).expect("base64url")).expect("JSON");
    header["jwk"].clone()
}

/// The keys the token requests since `from` proved, in order.
fn token_request_keys(realm: &OAuthRealm, from: usize) -> Vec<Value> {
    realm
        .token_requests()
        .iter()
        .skip(from)
        .map(|request| {
            assert_eq!(request.form["grant_type"], "client_credentials");
            proof_key(
                request
                    .dpop
                    .as_deref()
                    .expect("a proof on every token request"),
            )
        })
        .collect()
}

async fn a_client_credentials_token_is_bound_to_the_integrations_own_sealed_dpop_key(kind: DbKind) {
    let realm = OAuthRealm::default();
    realm.require_dpop(true);
    let upstream = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let sealing = |config: &mut switchboard_mcp_service::Config| {
        config.secret_keys = Some(SEALING_KEY.to_owned());
    };
    let mut h = start_with(kind, sealing).await;
    let auth = || {
        Some(pinned_to_origin(
            &upstream.url(),
            Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
                client_id: "svc-client".into(),
                client_secret: "basic-secret".into(),
                ..Default::default()
            }),
        ))
    };
    let first = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("first", &upstream.url(), auth()),
    )
    .await
    .id;
    let answer = echo(&mut h.client, &first).await;
    assert!(!answer.is_error, "{}", answer.error_message);
    assert_eq!(realm.calls().last().map(String::as_str), Some("client"));

    // The token endpoint asked for its nonce once; the MCP server for its
    // own on the first request and on the `ping` that learned it.
    let events = realm.dpop_events();
    assert_eq!(events, ["as-nonce", "rs-nonce", "rs-nonce"], "{events:?}");
    let keys = token_request_keys(&realm, 0);
    assert_eq!(keys.len(), 2, "refused for the nonce, then granted");
    assert_eq!(keys[0], keys[1]);
    let first_key = keys[0].clone();
    // Never a bearer token; a proof beside every token.
    let presented = realm.presented();
    assert!(!presented.is_empty());
    assert!(
        presented.iter().all(|a| a.starts_with("DPoP ")),
        "{presented:?}"
    );
    assert_eq!(realm.presented_proofs().len(), presented.len());
    assert!(
        realm
            .presented_proofs()
            .iter()
            .all(|proof| proof_key(proof) == first_key)
    );

    // Another integration has a key of its own.
    let second = create(
        &mut h,
        &admin("org-a"),
        http_integration_with_auth("second", &upstream.url(), auth()),
    )
    .await
    .id;
    let seen = realm.token_requests().len();
    let answer = echo(&mut h.client, &second).await;
    assert!(!answer.is_error, "{}", answer.error_message);
    let keys = token_request_keys(&realm, seen);
    assert!(!keys.is_empty() && keys.iter().all(|key| *key != first_key));

    // Another replica, with a token cache of its own, proves the first
    // integration's key: the key is stored with the integration, not kept
    // by a process.
    let (_replica, mut client) = h.replica(sealing).await;
    let seen = realm.token_requests().len();
    let answer = echo(&mut client, &first).await;
    assert!(!answer.is_error, "{}", answer.error_message);
    let keys = token_request_keys(&realm, seen);
    assert!(!keys.is_empty() && keys.iter().all(|key| *key == first_key));
    let events = realm.dpop_events();
    assert!(
        events.iter().all(|e| e == "as-nonce" || e == "rs-nonce"),
        "only nonces were asked for: {events:?}"
    );
}
