//! OAuth client credentials as the MCP extension defines them, end to end
//! against the example server's authorization server: the token endpoint
//! named by the pinned issuer's own metadata (no token URL configured),
//! each client authentication method as the token endpoint receives it, and
//! the service's workload identity token as a JWT bearer grant, read afresh
//! on every token request and sent only to the authorization server it is
//! addressed to.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use switchboard_example_mcp_server::{
    HttpServerOptions, OAuthRealm, RunningHttpServer, spawn_http,
};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, auth_config::Method},
};
use switchboard_test_support::{DbKind, db_tests};

use crate::support::{
    Harness, admin, create, http_integration_with_auth, pinned_to_origin, req, start, start_with,
};

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

fn client_credentials(auth: pb::OAuthClientCredentialsAuth) -> Method {
    Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
        client_id: "svc-client".into(),
        ..auth
    })
}

async fn echo(h: &mut Harness, id: &str) -> pb::ExecuteToolResponse {
    h.client
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

async fn integration(h: &mut Harness, slug: &str, url: &str, auth: Method) -> String {
    create(
        h,
        &admin("org-a"),
        http_integration_with_auth(slug, url, Some(pinned_to_origin(url, auth))),
    )
    .await
    .id
}

/// A JWT's claims, unverified.
fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("JSON")
}

async fn each_client_authentication_method_reaches_a_discovered_token_endpoint(kind: DbKind) {
    let (realm, upstream) = protected_server().await;
    let issuer = realm.base();
    let key = rcgen::KeyPair::generate().expect("a P-256 key");
    let mut h = start(kind).await;

    let basic = integration(
        &mut h,
        "basic",
        &upstream.url(),
        client_credentials(pb::OAuthClientCredentialsAuth {
            client_secret: "basic-secret".into(),
            ..Default::default()
        }),
    )
    .await;
    let post = integration(
        &mut h,
        "post",
        &upstream.url(),
        client_credentials(pb::OAuthClientCredentialsAuth {
            client_secret: "post-secret".into(),
            client_authentication: pb::ClientAuthentication::ClientSecretPost.into(),
            ..Default::default()
        }),
    )
    .await;
    let signed = integration(
        &mut h,
        "signed",
        &upstream.url(),
        client_credentials(pb::OAuthClientCredentialsAuth {
            private_key: key.serialize_pem(),
            client_authentication: pb::ClientAuthentication::PrivateKeyJwt.into(),
            ..Default::default()
        }),
    )
    .await;
    for id in [&basic, &post, &signed] {
        let answer = echo(&mut h, id).await;
        assert!(!answer.is_error, "{}", answer.error_message);
    }
    let calls = realm.calls();
    assert!(
        calls.len() >= 3 && calls.iter().all(|c| c == "client"),
        "{calls:?}"
    );

    let requests = realm.token_requests();
    assert_eq!(requests.len(), 3, "one token request per integration");
    for request in &requests {
        assert_eq!(request.form["grant_type"], "client_credentials");
        assert_eq!(request.form["resource"], upstream.url());
    }
    // client_secret_basic: HTTP Basic only, nothing secret in the body.
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("svc-client:basic-secret")
    );
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some(expected.as_str())
    );
    assert!(!requests[0].form.contains_key("client_secret"));
    // client_secret_post: in the body, no Authorization header.
    assert_eq!(requests[1].authorization, None);
    assert_eq!(requests[1].form["client_id"], "svc-client");
    assert_eq!(requests[1].form["client_secret"], "post-secret");
    // private_key_jwt: an assertion signed with the key, addressed to the
    // issuer, naming the client.
    assert_eq!(requests[2].authorization, None);
    assert_eq!(
        requests[2].form["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    let assertion = &requests[2].form["client_assertion"];
    let public = jsonwebtoken::DecodingKey::from_ec_pem(key.public_key_pem().as_bytes())
        .expect("the public key");
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[issuer.as_str()]);
    validation.set_issuer(&["svc-client"]);
    let verified = jsonwebtoken::decode::<Value>(assertion, &public, &validation)
        .expect("the assertion verifies with the client's public key");
    assert_eq!(verified.claims["sub"], "svc-client");
    assert!(verified.claims["jti"].is_string());
}

db_tests!(each_client_authentication_method_reaches_a_discovered_token_endpoint);

/// A JWT as a platform issues workload tokens (signature unchecked by the
/// test server).
fn workload_jwt(subject: &str, audience: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(
        json!({"iss": "https://kubernetes.default.svc", "sub": subject, "aud": [audience]})
            .to_string(),
    );
    format!("{header}.{claims}.c2lnbmF0dXJl")
}

#[tokio::test]
async fn the_workload_identity_token_is_read_afresh_and_sent_only_to_its_audience() {
    let (realm, upstream) = protected_server().await;
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("token");
    std::fs::write(
        &file,
        workload_jwt("system:serviceaccount:a:first", &realm.base()),
    )
    .expect("written");
    let path = file.clone();
    let mut h = start_with(DbKind::Sqlite, move |config| {
        config.workload_identity_token_file = Some(path);
    })
    .await;
    let id = integration(
        &mut h,
        "workload",
        &upstream.url(),
        client_credentials(pb::OAuthClientCredentialsAuth {
            client_authentication: pb::ClientAuthentication::WorkloadIdentity.into(),
            ..Default::default()
        }),
    )
    .await;

    let answer = echo(&mut h, &id).await;
    assert!(!answer.is_error, "{}", answer.error_message);
    // The platform rotates the token; the access token is revoked, so the
    // next call asks for a new one, which carries the new workload token.
    std::fs::write(
        &file,
        workload_jwt("system:serviceaccount:a:second", &realm.base()),
    )
    .expect("rotated");
    realm.expire_access("system:serviceaccount:a:first");
    let answer = echo(&mut h, &id).await;
    assert!(!answer.is_error, "{}", answer.error_message);
    let mut callers = realm.calls();
    callers.dedup();
    assert_eq!(
        callers,
        [
            "system:serviceaccount:a:first",
            "system:serviceaccount:a:second"
        ]
    );
    let requests = realm.token_requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.form["grant_type"],
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
        assert_eq!(request.authorization, None);
        assert_eq!(claims(&request.form["assertion"])["aud"][0], realm.base());
    }

    // A token addressed to another authorization server is not sent here.
    std::fs::write(
        &file,
        workload_jwt("system:serviceaccount:a:third", "https://idp.example"),
    )
    .expect("rotated");
    realm.expire_access("system:serviceaccount:a:second");
    let answer = echo(&mut h, &id).await;
    assert!(answer.is_error);
    assert!(
        answer
            .error_message
            .contains("not addressed to this authorization server"),
        "{}",
        answer.error_message
    );
    assert_eq!(realm.token_requests().len(), 2, "no request carried it");
}

#[tokio::test]
async fn a_discovered_authorization_server_other_than_the_pinned_issuer_gets_no_secret() {
    let (realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let id = integration(
        &mut h,
        "pinned",
        &upstream.url(),
        client_credentials(pb::OAuthClientCredentialsAuth {
            client_secret: "pinned-secret".into(),
            issuer: "https://login.example".into(),
            ..Default::default()
        }),
    )
    .await;
    let answer = echo(&mut h, &id).await;
    assert!(answer.is_error);
    assert!(
        answer.error_message.contains("no credential was sent"),
        "{}",
        answer.error_message
    );
    assert!(realm.token_requests().is_empty());
    assert_eq!(upstream.stats.snapshot().tool_calls, 0);
}

#[tokio::test]
async fn a_private_key_that_does_not_parse_for_its_algorithm_is_refused_on_create() {
    let (_realm, upstream) = protected_server().await;
    let mut h = start(DbKind::Sqlite).await;
    let ec_key = rcgen::KeyPair::generate()
        .expect("a P-256 key")
        .serialize_pem();
    let cases = [
        ("ES256", "not a key".to_owned(), "private_key"),
        ("RS256", ec_key.clone(), "private_key"),
        ("HS256", ec_key, "signing_algorithm"),
    ];
    for (algorithm, private_key, field) in cases {
        let status = h
            .client
            .create_integration(req(
                http_integration_with_auth(
                    "signed",
                    &upstream.url(),
                    Some(pinned_to_origin(
                        &upstream.url(),
                        client_credentials(pb::OAuthClientCredentialsAuth {
                            private_key: private_key.clone(),
                            signing_algorithm: algorithm.into(),
                            client_authentication: pb::ClientAuthentication::PrivateKeyJwt.into(),
                            ..Default::default()
                        }),
                    )),
                ),
                &admin("org-a"),
            ))
            .await
            .expect_err("refused");
        assert_eq!(
            crate::support::bad_fields(&status),
            [format!("custom.auth.oauth_client_credentials.{field}")],
            "{algorithm}"
        );
        assert!(!status.message().contains("PRIVATE KEY"), "{status:?}");
    }
}
