//! Integrations acting on behalf of the caller by token exchange (RFC 8693),
//! end to end against the example server's authorization server: each
//! caller's own gRPC token is exchanged at the token endpoint the pinned
//! issuer's metadata names for a token of their own, which alone reaches the MCP server, on
//! sessions of their own; exchanged tokens are reused until they expire and
//! kept up to a bound; a refused exchange is the caller's PERMISSION_DENIED.

use serde_json::json;
use switchboard_example_mcp_server::{
    HttpServerOptions, OAuthRealm, RunningHttpServer, spawn_http, spawn_identity_provider,
};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, auth_config::Method},
};
use switchboard_test_support::{DbKind, db_tests, token};
use tonic::Code;

use crate::support::{
    Harness, admin, bad_fields, create, http_integration_with_auth, pinned_to_origin, req, start,
    start_with, validate,
};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

async fn protected_server() -> (OAuthRealm, RunningHttpServer) {
    let realm = OAuthRealm::default();
    let server = spawn_http(HttpServerOptions {
        oauth: Some(realm.clone()),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    (realm, server)
}

fn token_exchange(audience: &str) -> Method {
    Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        client_id: "svc-client".into(),
        client_secret: "svc-secret".into(),
        on_behalf_of: pb::OnBehalfOf::TokenExchange.into(),
        audience: audience.into(),
        ..Default::default()
    })
}

async fn integration(h: &mut Harness, url: &str, auth: Method) -> String {
    create(
        h,
        &admin("org-a"),
        http_integration_with_auth("on_behalf", url, Some(pinned_to_origin(url, auth))),
    )
    .await
    .id
}

/// ExecuteTool `echo` as the holder of `caller` in session scope `scope`.
async fn echo(
    h: &mut Harness,
    id: &str,
    caller: &str,
    scope: &str,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.to_owned(),
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "hi"})),
                session_scope: scope.to_owned(),
                ..Default::default()
            },
            caller,
        ))
        .await
        .map(tonic::Response::into_inner)
}

async fn echo_ok(h: &mut Harness, id: &str, caller: &str, scope: &str) {
    let answer = echo(h, id, caller, scope).await.expect("answered");
    assert!(!answer.is_error, "{}", answer.error_message);
}

fn exchanges(realm: &OAuthRealm) -> usize {
    realm
        .token_requests()
        .iter()
        .filter(|r| r.form.get("grant_type").map(String::as_str) == Some(TOKEN_EXCHANGE))
        .count()
}

async fn two_callers_each_get_their_own_exchanged_token_and_session(kind: DbKind) {
    let (realm, upstream) = protected_server().await;
    let mut h = start(kind).await;
    let id = integration(&mut h, &upstream.url(), token_exchange("")).await;
    let alice = token("org-a", "alice", &["member"]);
    let bob = token("org-a", "bob", &["member"]);

    echo_ok(&mut h, &id, &alice, "").await;
    echo_ok(&mut h, &id, &bob, "").await;

    // Each caller's requests reached the server with their own token: a
    // shared session would have carried alice's to bob's call.
    let calls = realm.calls();
    assert!(calls.contains(&"alice".to_owned()), "{calls:?}");
    assert!(calls.contains(&"bob".to_owned()), "{calls:?}");
    let first_bob = calls.iter().position(|c| c == "bob").expect("bob called");
    assert!(calls[..first_bob].iter().all(|c| c == "alice"), "{calls:?}");
    assert!(calls[first_bob..].iter().all(|c| c == "bob"), "{calls:?}");

    // The exchange requests, field by field.
    let requests = realm.token_requests();
    assert_eq!(requests.len(), 2, "one exchange per caller");
    let expected_basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "svc-client:svc-secret"
        )
    );
    for (request, raw) in requests.iter().zip([&alice, &bob]) {
        let form = &request.form;
        assert_eq!(form["grant_type"], TOKEN_EXCHANGE);
        assert_eq!(&form["subject_token"], raw, "the caller's own token");
        assert_eq!(form["subject_token_type"], ACCESS_TOKEN);
        assert_eq!(form["requested_token_type"], ACCESS_TOKEN);
        assert_eq!(form["audience"], upstream.url());
        assert_eq!(form["resource"], upstream.url());
        assert!(!form.contains_key("client_secret"));
        assert_eq!(
            request.authorization.as_deref(),
            Some(expected_basic.as_str())
        );
    }

    // The same caller again, on a new session and in discovery: the
    // exchanged token is reused.
    echo_ok(&mut h, &id, &alice, "thread-2").await;
    h.client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.clone(),
                bypass_cache: true,
                allowed_tools: None,
            },
            &alice,
        ))
        .await
        .expect("discovered");
    assert_eq!(exchanges(&realm), 2, "no exchange for a cached token");

    // The callers' own tokens never reached the MCP server.
    let presented = realm.presented();
    assert!(!presented.is_empty());
    for header in &presented {
        assert!(header.starts_with("Bearer at-"), "{header}");
        assert!(!header.contains(&alice) && !header.contains(&bob));
    }
}

db_tests!(two_callers_each_get_their_own_exchanged_token_and_session);

#[tokio::test]
async fn a_configured_audience_is_asked_for() {
    let (realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let id = integration(&mut h, &upstream.url(), token_exchange("orders-api")).await;
    echo_ok(&mut h, &id, &token("org-a", "alice", &[]), "").await;
    let requests = realm.token_requests();
    assert_eq!(requests[0].form["audience"], "orders-api");
    assert_eq!(requests[0].form["resource"], upstream.url());
}

#[tokio::test]
async fn an_expired_or_refused_exchanged_token_is_exchanged_again() {
    let (realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let id = integration(&mut h, &upstream.url(), token_exchange("")).await;
    let alice = token("org-a", "alice", &[]);

    // Tokens said to live 30 s are renewed at once (the renewal margin).
    realm.set_access_lifetime(30);
    echo_ok(&mut h, &id, &alice, "one").await;
    echo_ok(&mut h, &id, &alice, "two").await;
    assert_eq!(exchanges(&realm), 2, "an expired token is exchanged again");

    // A token the server stops accepting before its stated expiry: the
    // session's next request is refused with a 401, and the call goes
    // through once more with a token exchanged afresh.
    realm.set_access_lifetime(3600);
    echo_ok(&mut h, &id, &alice, "three").await;
    assert_eq!(exchanges(&realm), 3);
    realm.expire_access("alice");
    echo_ok(&mut h, &id, &alice, "three").await;
    assert_eq!(exchanges(&realm), 4, "a refused token is exchanged again");
}

#[tokio::test]
async fn the_exchanged_token_cache_holds_at_most_its_bound() {
    let (realm, upstream) = protected_server().await;
    let mut h = start_with(DbKind::Sqlite, |config| {
        config.exchanged_token_cache_entries = 1;
    })
    .await;
    let id = integration(&mut h, &upstream.url(), token_exchange("")).await;
    let (alice, bob) = (token("org-a", "alice", &[]), token("org-a", "bob", &[]));
    echo_ok(&mut h, &id, &alice, "one").await;
    echo_ok(&mut h, &id, &alice, "two").await;
    assert_eq!(exchanges(&realm), 1, "at the bound, the one token is kept");
    echo_ok(&mut h, &id, &bob, "one").await;
    // Bob's token took the one place: alice's new session exchanges again.
    echo_ok(&mut h, &id, &alice, "three").await;
    assert_eq!(
        exchanges(&realm),
        3,
        "past the bound, alice's was forgotten"
    );
}

#[tokio::test]
async fn a_refused_exchange_is_permission_denied_and_nothing_reaches_the_server() {
    let (realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let id = integration(&mut h, &upstream.url(), token_exchange("")).await;
    realm.refuse_exchanges();
    let status = echo(&mut h, &id, &token("org-a", "alice", &[]), "")
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("HTTP 400 (invalid_grant)"),
        "{status:?}"
    );
    assert!(
        realm.presented().is_empty(),
        "no token reached the MCP server"
    );
}

#[tokio::test]
async fn a_subject_token_naming_another_caller_is_refused() {
    let (realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let id = integration(&mut h, &upstream.url(), token_exchange("")).await;
    let mut request = req(
        pb::ExecuteToolRequest {
            integration_id: id,
            tool_name: "echo".into(),
            arguments: json_to_struct(&json!({"text": "hi"})),
            ..Default::default()
        },
        &token("org-a", "alice", &[]),
    );
    let bobs = token("org-a", "bob", &[]);
    request.metadata_mut().insert(
        "x-switchboard-subject-token",
        bobs.parse().expect("metadata"),
    );
    let status = h.client.execute_tool(request).await.expect_err("refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(realm.token_requests().is_empty(), "nothing was exchanged");
}

#[tokio::test]
async fn a_grant_on_behalf_of_the_caller_needs_a_client_credential_and_a_complete_identity_provider()
 {
    let (_realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let workload = Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        client_authentication: pb::ClientAuthentication::WorkloadIdentity.into(),
        on_behalf_of: pb::OnBehalfOf::TokenExchange.into(),
        ..Default::default()
    });
    let enterprise = Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        client_id: "svc-client".into(),
        client_secret: "svc-secret".into(),
        on_behalf_of: pb::OnBehalfOf::EnterpriseManaged.into(),
        identity_provider: Some(pb::IdentityProvider {
            issuer: "ftp://idp.example".into(),
            token_url: String::new(),
            client_id: String::new(),
        }),
        ..Default::default()
    });
    for (auth, expected) in [
        (
            workload,
            vec!["custom.auth.oauth_client_credentials.client_authentication"],
        ),
        (
            enterprise,
            vec![
                "custom.auth.oauth_client_credentials.identity_provider.client_id",
                "custom.auth.oauth_client_credentials.identity_provider.issuer",
                "custom.auth.oauth_client_credentials.identity_provider.token_url",
            ],
        ),
    ] {
        let status = h
            .client
            .create_integration(req(
                http_integration_with_auth("bad", &upstream.url(), Some(auth)),
                &admin("org-a"),
            ))
            .await
            .expect_err("refused");
        let mut fields = bad_fields(&status);
        fields.sort();
        fields.dedup();
        for field in expected {
            assert!(fields.iter().any(|f| f == field), "{field} in {fields:?}");
        }
    }
}

#[tokio::test]
async fn validation_exchanges_the_validating_callers_token_and_keeps_nothing() {
    let (realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let id = integration(&mut h, &upstream.url(), token_exchange("")).await;
    let admin = admin("org-a");
    let report = validate(&mut h, &admin, &id).await;
    assert_eq!(report.error, "", "{report:?}");
    assert!(report.tool_count > 0);
    assert_eq!(realm.token_requests()[0].form["subject_token"], admin);
    // The admin's exchanged token was not kept for anyone.
    echo_ok(&mut h, &id, &token("org-a", "alice", &[]), "").await;
    let requests = realm.token_requests();
    assert_eq!(requests.len(), 2);
    assert_ne!(requests[1].form["subject_token"], admin);
}

/// An ID token as an enterprise identity provider issues them (its
/// signature is the identity provider's to check, and the test one does
/// not).
fn id_token(subject: &str) -> String {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(
        json!({"iss": "https://idp.example", "sub": subject, "aud": "idp-client"}).to_string(),
    );
    format!("{header}.{claims}.c2lnbmF0dXJl")
}

#[tokio::test]
async fn enterprise_managed_authorization_sends_the_id_token_only_to_the_identity_provider() {
    let (realm, upstream) = protected_server().await;
    let idp = spawn_identity_provider("svc-client").await.expect("an IdP");
    let mut h = start(DbKind::Sqlite).await;
    let auth = Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        client_id: "svc-client".into(),
        client_secret: "svc-secret".into(),
        on_behalf_of: pb::OnBehalfOf::EnterpriseManaged.into(),
        identity_provider: Some(pb::IdentityProvider {
            issuer: idp.issuer(),
            token_url: idp.token_url(),
            client_id: "idp-client".into(),
        }),
        ..Default::default()
    });
    let id = integration(&mut h, &upstream.url(), auth).await;
    let alice = token("org-a", "alice", &[]);
    let alices_id_token = id_token("alice");
    let mut request = req(
        pb::ExecuteToolRequest {
            integration_id: id,
            tool_name: "echo".into(),
            arguments: json_to_struct(&json!({"text": "hi"})),
            ..Default::default()
        },
        &alice,
    );
    request.metadata_mut().insert(
        "x-switchboard-subject-token",
        alices_id_token.parse().expect("metadata"),
    );
    let answer = h.client.execute_tool(request).await.expect("answered");
    assert!(
        !answer.get_ref().is_error,
        "{}",
        answer.get_ref().error_message
    );
    assert_eq!(realm.calls(), ["alice"; 1].repeat(realm.calls().len()));

    // The identity provider: the caller's ID token for an assertion
    // addressed to the MCP server's authorization server.
    let exchanged = idp.token_requests();
    assert_eq!(exchanged.len(), 1);
    let form = &exchanged[0].form;
    assert_eq!(form["grant_type"], TOKEN_EXCHANGE);
    assert_eq!(form["subject_token"], alices_id_token);
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(
        form["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(form["audience"], realm.base());
    assert_eq!(form["resource"], upstream.url());
    assert_eq!(form["client_id"], "idp-client");
    // The authorization server: the assertion, with the client's secret.
    let redeemed = realm.token_requests();
    assert_eq!(redeemed.len(), 1);
    assert_eq!(
        redeemed[0].form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_ne!(redeemed[0].form["assertion"], alices_id_token);
    assert!(
        redeemed[0]
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic "))
    );
    // Neither of the caller's tokens reached the MCP server.
    for header in realm.presented() {
        assert!(!header.contains(&alice) && !header.contains(&alices_id_token));
    }
}
