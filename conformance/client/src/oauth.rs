//! Completing an OAuth authorization the way an application does: mcp-service
//! answers FAILED_PRECONDITION with the authorization URL; the user's browser
//! goes there, the authorization server redirects it to the application's
//! redirect URI with `code` and `state`, and the application hands those to
//! CompleteAuthorization. The scenarios' authorization servers redirect at
//! once, so following the URL stands in for the user.

use anyhow::{Context as _, bail};
use switchboard_proto::mcp::v1 as pb;

use crate::{
    Scenario,
    switchboard::{Switchboard, authorization_url},
};

/// Authorizations one call may ask for (a step-up asks for a second).
pub const MAX_AUTHORIZATIONS: usize = 3;

/// Where the scenario's authorization server sends the browser back.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client ID metadata document the scenarios accept.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The issuer an admin pins for a client-credentials scenario: the one the
/// scenario names, else the authorization server its MCP server names
/// (RFC 9728), looked up here as an admin would before configuring it.
/// mcp-service sends a client credential only to a pinned issuer's token
/// endpoint.
async fn issuer_to_pin(scenario: &Scenario) -> anyhow::Result<String> {
    if let Some(issuer) = scenario.context["issuer"].as_str() {
        return Ok(issuer.to_owned());
    }
    let server = url::Url::parse(&scenario.server_url).context("the server URL")?;
    let path = server.path().trim_end_matches('/');
    let http = reqwest::Client::new();
    for well_known in [
        format!("/.well-known/oauth-protected-resource{path}"),
        "/.well-known/oauth-protected-resource".to_owned(),
    ] {
        let mut url = server.clone();
        url.set_path(&well_known);
        url.set_query(None);
        let response = http.get(url).send().await?;
        if !response.status().is_success() {
            continue;
        }
        let metadata: serde_json::Value = response.json().await?;
        if let Some(issuer) = metadata["authorization_servers"][0].as_str() {
            return Ok(issuer.to_owned());
        }
    }
    bail!("the scenario's server names no authorization server to pin")
}

/// The integration's auth: client credentials (pinned to the issuer the
/// scenario's server names) for the scenarios of the client credentials,
/// workload identity and enterprise-managed authorization extensions
/// (with the scenario's identity provider); else the authorization code
/// flow, pre-registered when the scenario gives a client, else a client ID
/// metadata document or dynamic registration.
pub async fn auth_config(scenario: &Scenario) -> anyhow::Result<pb::auth_config::Method> {
    let text = |name: &str| {
        scenario.context[name]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let client_credentials = |authentication: pb::ClientAuthentication, issuer: String| {
        pb::auth_config::Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
            issuer,
            client_id: text("client_id"),
            client_secret: text("client_secret"),
            private_key: text("private_key_pem"),
            signing_algorithm: text("signing_algorithm"),
            client_authentication: authentication.into(),
            ..Default::default()
        })
    };
    let authentication = match scenario.name.as_str() {
        "auth/client-credentials-basic" => Some(pb::ClientAuthentication::ClientSecretBasic),
        "auth/client-credentials-jwt" => Some(pb::ClientAuthentication::PrivateKeyJwt),
        "auth/wif-jwt-bearer" => Some(pb::ClientAuthentication::WorkloadIdentity),
        _ => None,
    };
    if let Some(authentication) = authentication {
        let issuer = issuer_to_pin(scenario).await?;
        return Ok(client_credentials(authentication, issuer));
    }
    if scenario.name == "auth/enterprise-managed-authorization" {
        return Ok(pb::auth_config::Method::OauthClientCredentials(
            pb::OAuthClientCredentialsAuth {
                issuer: issuer_to_pin(scenario).await?,
                client_id: text("client_id"),
                client_secret: text("client_secret"),
                on_behalf_of: pb::OnBehalfOf::EnterpriseManaged.into(),
                identity_provider: Some(pb::IdentityProvider {
                    issuer: text("idp_issuer"),
                    token_url: text("idp_token_endpoint"),
                    client_id: text("idp_client_id"),
                }),
                ..Default::default()
            },
        ));
    }
    Ok(pb::auth_config::Method::OauthAuthorizationCode(
        pb::OAuthAuthorizationCodeAuth {
            redirect_uri: REDIRECT_URI.to_owned(),
            client_id: text("client_id"),
            client_secret: text("client_secret"),
            // A pre-registered secret goes only to the issuer it was given for.
            issuer: text("issuer"),
            client_metadata_url: CLIENT_METADATA_URL.to_owned(),
            ..Default::default()
        },
    ))
}

/// Where the workload identity token of `auth/wif-jwt-bearer` is written
/// (the scenario's `valid_jwt`, standing in for the pod's projected
/// service-account token); `None` for other scenarios.
pub fn workload_token_file(scenario: &Scenario) -> anyhow::Result<Option<std::path::PathBuf>> {
    let Some(jwt) = scenario.context["valid_jwt"].as_str() else {
        return Ok(None);
    };
    let path = std::env::temp_dir().join(format!(
        "switchboard-conformance-workload-{}.jwt",
        std::process::id()
    ));
    std::fs::write(&path, jwt).context("failed to write the workload identity token")?;
    Ok(Some(path))
}

/// Authorizes when `status` asks for it; fails with `status` otherwise.
pub async fn authorize_or_fail(
    switchboard: &mut Switchboard,
    what: &str,
    status: tonic::Status,
) -> anyhow::Result<()> {
    let Some(url) = authorization_url(&status) else {
        bail!("{what} failed: {status:?}");
    };
    eprintln!("conformance-client: {what} needs authorization");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let response = browser.get(&url).send().await?;
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .context("the authorization server did not redirect back")?;
    let callback = url::Url::parse(location).context("the redirect is not a URL")?;
    let param = |name: &str| {
        callback
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default()
    };
    if !param("error").is_empty() {
        bail!("the authorization server refused: {}", param("error"));
    }
    switchboard
        .complete_authorization(&param("state"), &param("code"), &param("iss"))
        .await
        .map_err(|status| anyhow::anyhow!("CompleteAuthorization failed: {status:?}"))
}

/// The caller's ID token of `auth/enterprise-managed-authorization` (the
/// scenario's `idp_id_token`, as the user's single sign-on gave it to the
/// application); `None` for other scenarios.
pub fn id_token(scenario: &Scenario) -> Option<String> {
    scenario.context["idp_id_token"].as_str().map(str::to_owned)
}
