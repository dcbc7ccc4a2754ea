//! `integrations create --client-credentials`: the service authenticates
//! as itself, the token endpoint named by the pinned issuer's metadata, the
//! client secret sent the way the flag says.

use switchboard_example_mcp_server::OAuthRealm;

use crate::world::{Setup, World};

#[tokio::test]
async fn an_integration_created_with_client_credentials_reads_its_issuers_token_endpoint() {
    let realm = OAuthRealm::default();
    let world = World::start_with(
        Vec::new(),
        Setup {
            oauth: Some(realm.clone()),
            ..Setup::default()
        },
    )
    .await;
    let url = world.upstream.url();
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "example",
            "--url",
            &url,
            "--client-credentials",
            "client-secret-post",
            "--client-id",
            "cli-client",
            "--client-secret",
            "cli-secret",
            "--token-issuer",
            &realm.base(),
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "example"]).await;
    assert!(
        shown.contains("CLIENT_AUTHENTICATION_CLIENT_SECRET_POST") && !shown.contains("cli-secret"),
        "{shown}"
    );
    world.ok(&["integrations", "discover", "example"]).await;
    let requests = realm.token_requests();
    assert_eq!(requests.len(), 1, "one token request");
    assert_eq!(requests[0].form["client_id"], "cli-client");
    assert_eq!(requests[0].form["client_secret"], "cli-secret");
    assert!(realm.calls().iter().all(|caller| caller == "client"));
}

#[tokio::test]
async fn an_integration_created_on_behalf_of_the_caller_exchanges_the_callers_token() {
    let realm = OAuthRealm::default();
    let world = World::start_with(
        Vec::new(),
        Setup {
            oauth: Some(realm.clone()),
            ..Setup::default()
        },
    )
    .await;
    let url = world.upstream.url();
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "example",
            "--url",
            &url,
            "--client-credentials",
            "client-secret-basic",
            "--client-id",
            "cli-client",
            "--client-secret",
            "cli-secret",
            "--token-issuer",
            &realm.base(),
            "--on-behalf-of",
            "token-exchange",
            "--token-audience",
            "orders",
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "example"]).await;
    assert!(shown.contains("ON_BEHALF_OF_TOKEN_EXCHANGE"), "{shown}");
    world.ok(&["integrations", "discover", "example"]).await;
    let requests = realm.token_requests();
    assert_eq!(requests.len(), 1, "one exchange");
    assert_eq!(
        requests[0].form["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(requests[0].form["audience"], "orders");
    assert!(!requests[0].form["subject_token"].is_empty());
    assert!(
        realm.calls().iter().all(|caller| caller != "client"),
        "{:?}",
        realm.calls()
    );
}
