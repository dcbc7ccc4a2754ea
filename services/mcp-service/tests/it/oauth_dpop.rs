//! DPoP-bound tokens (RFC 9449) of the authorization code flow, end to end,
//! against the example server's authorization server and MCP endpoint
//! requiring them: proofs at the token endpoint and on every MCP request,
//! the servers' nonces honoured with one retry each, a bound token never
//! presented as a bearer token, and the proofs bound to their request (a
//! proof replayed, for another method or URL, or missing is refused).

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, OAuthRealm, spawn_http};
use switchboard_proto::{json::json_to_struct, mcp::v1 as pb};
use switchboard_test_support::{DbKind, db_tests};

use crate::oauth_users::{REDIRECT_URI, authorization_url, sign_in, user};
use crate::support::{Harness, admin, create, http_integration_with_auth, req, start};

async fn echo(h: &mut Harness, id: &str) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "hi"})),
                ..Default::default()
            },
            &user("alice"),
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// An integration of the authorization code flow over `upstream`, with
/// alice's account connected.
async fn connected(h: &mut Harness, upstream_url: &str) -> String {
    let auth = pb::auth_config::Method::OauthAuthorizationCode(pb::OAuthAuthorizationCodeAuth {
        redirect_uri: REDIRECT_URI.into(),
        ..Default::default()
    });
    let id = create(
        h,
        &admin("org-a"),
        http_integration_with_auth("provider", upstream_url, Some(auth)),
    )
    .await
    .id;
    let url = authorization_url(&echo(h, &id).await.expect_err("needs authorization"));
    let (state, code, iss) = sign_in(&url, "alice").await;
    h.client
        .complete_authorization(req(
            pb::CompleteAuthorizationRequest { state, code, iss },
            &user("alice"),
        ))
        .await
        .expect("authorization completes");
    id
}

async fn dpop_upstream(
    nonces: bool,
) -> (
    OAuthRealm,
    switchboard_example_mcp_server::RunningHttpServer,
) {
    let realm = OAuthRealm::default();
    realm.require_dpop(nonces);
    let upstream = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    (realm, upstream)
}

async fn a_dpop_bound_token_is_proven_on_every_request_with_the_servers_nonces(kind: DbKind) {
    let (realm, upstream) = dpop_upstream(true).await;
    let mut h = start(kind).await;
    let id = connected(&mut h, &upstream.url()).await;
    let answered = echo(&mut h, &id).await.expect("alice calls");
    assert!(!answered.is_error, "{answered:?}");
    assert_eq!(realm.calls().last().map(String::as_str), Some("alice"));

    // The token endpoint asked for its nonce once; the MCP server for its
    // own on the first request and on the `ping` that learned it.
    let events = realm.dpop_events();
    assert_eq!(events, ["as-nonce", "rs-nonce", "rs-nonce"], "{events:?}");
    let exchange = realm
        .token_requests()
        .into_iter()
        .rfind(|r| r.form.get("grant_type").map(String::as_str) == Some("authorization_code"))
        .expect("the code was exchanged");
    assert!(exchange.dpop.is_some(), "the exchange carried a proof");

    // A rotated nonce, an expired token refreshed with a proof: one retry
    // each, and the call goes through.
    realm.rotate_dpop_nonces();
    realm.expire_access("alice");
    echo(&mut h, &id).await.expect("refreshed and proven");
    let events = realm.dpop_events();
    assert!(
        events.iter().all(|e| e == "as-nonce" || e == "rs-nonce"),
        "only nonces were asked for: {events:?}"
    );
    let refresh = realm
        .token_requests()
        .into_iter()
        .rfind(|r| r.form.get("grant_type").map(String::as_str) == Some("refresh_token"))
        .expect("the token was refreshed");
    assert!(refresh.dpop.is_some(), "the refresh carried a proof");

    // Never a bearer token; a proof beside every token.
    let presented = realm.presented();
    assert!(!presented.is_empty());
    assert!(
        presented.iter().all(|a| a.starts_with("DPoP ")),
        "{presented:?}"
    );
    assert_eq!(realm.presented_proofs().len(), presented.len());
}

/// Sends `proof` with `authorization` as a `method` request to `url`.
async fn replay(
    method: reqwest::Method,
    url: &str,
    authorization: &str,
    proof: Option<&str>,
) -> u16 {
    let mut request = reqwest::Client::new()
        .request(method, url)
        .header("authorization", authorization)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    if let Some(proof) = proof {
        request = request.header("dpop", proof);
    }
    request
        .send()
        .await
        .expect("the server answers")
        .status()
        .as_u16()
}

async fn a_proof_replayed_missing_or_for_another_request_is_refused(kind: DbKind) {
    let (realm, upstream) = dpop_upstream(false).await;
    let mut h = start(kind).await;
    let id = connected(&mut h, &upstream.url()).await;
    echo(&mut h, &id).await.expect("alice calls");
    let authorization = realm.presented().last().cloned().expect("a token");
    let proof = realm.presented_proofs().last().cloned().expect("a proof");
    let token = authorization.trim_start_matches("DPoP ").to_owned();
    let url = upstream.url();
    let other_url = url.replace("/mcp", "/other");

    // The proof for another method or URL, then as it was: its jti was
    // seen. (Method and URL are checked before the jti.)
    assert_eq!(
        replay(reqwest::Method::GET, &url, &authorization, Some(&proof)).await,
        401
    );
    assert_eq!(
        replay(
            reqwest::Method::POST,
            &other_url,
            &authorization,
            Some(&proof)
        )
        .await,
        401
    );
    assert_eq!(
        replay(reqwest::Method::POST, &url, &authorization, Some(&proof)).await,
        401
    );
    // The token without a proof, or as a bearer token.
    assert_eq!(
        replay(reqwest::Method::POST, &url, &authorization, None).await,
        401
    );
    assert_eq!(
        replay(
            reqwest::Method::POST,
            &url,
            &format!("Bearer {token}"),
            None
        )
        .await,
        401
    );
    let events = realm.dpop_events();
    assert_eq!(
        events,
        [
            "rs-invalid:htm",
            "rs-invalid:htu",
            "rs-invalid:replayed jti",
            "rs-invalid:no DPoP proof",
            "rs-bearer"
        ],
        "{events:?}"
    );
    // mcp-service's own next call is proven afresh.
    echo(&mut h, &id).await.expect("alice calls again");
    assert_eq!(realm.dpop_events().len(), events.len());
}

async fn a_server_refusing_every_nonce_gets_a_bounded_number_of_requests(kind: DbKind) {
    let (realm, upstream) = dpop_upstream(true).await;
    let mut h = start(kind).await;
    let id = connected(&mut h, &upstream.url()).await;
    echo(&mut h, &id).await.expect("alice calls");
    let before_mcp = realm.presented().len();
    let before_token = realm.token_requests().len();
    realm.refuse_every_dpop_nonce();
    realm.expire_access("alice");
    let refused = echo(&mut h, &id).await;
    assert!(
        refused.as_ref().map_or(true, |answer| answer.is_error),
        "no nonce passes: {refused:?}"
    );
    let mcp_requests = realm.presented().len() - before_mcp;
    let token_requests = realm.token_requests().len() - before_token;
    assert!(
        mcp_requests <= 6,
        "{mcp_requests} MCP requests: {refused:?}"
    );
    assert!(
        token_requests <= 4,
        "{token_requests} token requests: {refused:?}"
    );
}

db_tests!(
    a_dpop_bound_token_is_proven_on_every_request_with_the_servers_nonces,
    a_proof_replayed_missing_or_for_another_request_is_refused,
    a_server_refusing_every_nonce_gets_a_bounded_number_of_requests,
);
