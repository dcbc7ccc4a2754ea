//! The OAuth access token an integration's calls carry, for integrations
//! authenticating with OAuth client credentials: the service's own token,
//! or one exchanged for the caller's (on behalf of them). Shared by every
//! kind of integration: an MCP server's session, an OpenAPI API's and a
//! gRPC service's calls. A team's own services' calls also carry the
//! tokens of the authorization code flow (each member's own, or the
//! organization's), from [`AuthorizationCodeFlows`].

use secrecy::ExposeSecret as _;

use super::{
    authorization_code::AuthorizationCodeFlows,
    client_credentials::{AccessToken, Grant, OAuthTokens},
    dpop::DpopKey,
    on_behalf_of::{self, CallerGrant, ExchangedTokens},
    token_request::Credential,
};
use crate::domain::{
    integration::{AuthConfig, ClientAuth, Integration, Secrets},
    ports::CallError,
};

/// The tokens of client-credentials integrations, fetched and exchanged,
/// each cached.
#[derive(Debug, Clone)]
pub struct IntegrationTokens {
    tokens: OAuthTokens,
    exchanged: ExchangedTokens,
    flows: Option<AuthorizationCodeFlows>,
}

impl IntegrationTokens {
    /// Tokens fetched by `tokens`, exchanged ones kept in `exchanged`.
    pub fn new(tokens: OAuthTokens, exchanged: ExchangedTokens) -> Self {
        Self {
            tokens,
            exchanged,
            flows: None,
        }
    }

    /// These tokens, and the authorization code flows' from `flows`.
    #[must_use]
    pub fn with_flows(mut self, flows: AuthorizationCodeFlows) -> Self {
        self.flows = Some(flows);
        self
    }

    /// The access token of `user`'s grant of an authorization code
    /// integration (the organization's when it is organization-wide),
    /// refreshed when due; [`CallError::AuthorizationRequired`] when there
    /// is none to use.
    pub async fn authorized(
        &self,
        integration: &Integration,
        user: &str,
    ) -> Result<AccessToken, CallError> {
        let flows = self.flows.as_ref().ok_or_else(|| {
            CallError::Connect("the authorization code flow is not configured".into())
        })?;
        let (token, dpop) = flows
            .access_token(integration, integration.grant_user(user))
            .await?;
        Ok(AccessToken {
            token: token.into(),
            dpop,
        })
    }

    /// These tokens, exchanged ones kept in `exchanged`.
    #[must_use]
    pub fn with_exchanged(mut self, exchanged: ExchangedTokens) -> Self {
        self.exchanged = exchanged;
        self
    }

    /// Forgets the cached token `integration`'s calls for `user` carry,
    /// after its server refused it: the next call fetches a new one.
    pub fn forget(&self, integration: &Integration, user: &str) {
        if integration.acts_for_caller() {
            self.exchanged.invalidate(integration.id, user);
        } else {
            self.tokens.invalidate(integration.id);
        }
    }

    /// The OAuth token of a client-credentials integration's calls for
    /// `user`: the service's own, or one exchanged for the caller's.
    pub async fn token(
        &self,
        integration: &Integration,
        user: &str,
    ) -> Result<AccessToken, CallError> {
        let AuthConfig::OAuthClientCredentials {
            token_url,
            client_id,
            scopes,
            client_auth,
            issuer,
            on_behalf_of,
        } = &integration.auth
        else {
            return Err(CallError::Connect(
                "the integration does not use OAuth client credentials".into(),
            ));
        };
        let credential = credential(integration, client_auth).map_err(CallError::Connect)?;
        let dpop_key = dpop_key(integration).map_err(CallError::Connect)?;
        let grant = Grant {
            integration_id: integration.id,
            mcp_url: integration.transport.url().unwrap_or_default(),
            token_url,
            issuer: issuer.as_deref(),
            client_id,
            credential,
            scopes,
            dpop_key: dpop_key.as_ref(),
        };
        if !on_behalf_of.is_caller() {
            return self.tokens.token(&grant).await.map_err(CallError::Connect);
        }
        let grant = CallerGrant {
            grant,
            on_behalf_of,
            org: &integration.org_id.0,
            version: integration.updated_at,
            subject: user,
        };
        let token = on_behalf_of::token(&self.tokens, &self.exchanged, &grant).await?;
        Ok(AccessToken { token, dpop: None })
    }
}

/// The integration's sealed DPoP key, if it has one (an integration made
/// before they were has none, and is sent bearer tokens only).
fn dpop_key(integration: &Integration) -> Result<Option<DpopKey>, String> {
    integration
        .secrets
        .get(Secrets::OAUTH_DPOP_KEY)
        .map(|key| {
            serde_json::from_value(serde_json::Value::from(key.expose_secret()))
                .map_err(|_| "the stored DPoP key is unusable".to_owned())
        })
        .transpose()
}

/// What `integration` proves itself with at its token endpoint, by
/// `client_auth`, from its stored secrets.
fn credential<'a>(
    integration: &'a Integration,
    client_auth: &'a ClientAuth,
) -> Result<Credential<'a>, String> {
    let secret = |name: &str, what: &str| {
        integration
            .secrets
            .get(name)
            .ok_or_else(|| format!("the OAuth {what} is not set"))
    };
    Ok(match client_auth {
        ClientAuth::ClientSecretBasic => {
            Credential::SecretBasic(secret(Secrets::OAUTH_CLIENT_SECRET, "client secret")?)
        }
        ClientAuth::ClientSecretPost => {
            Credential::SecretPost(secret(Secrets::OAUTH_CLIENT_SECRET, "client secret")?)
        }
        ClientAuth::PrivateKeyJwt { algorithm } => Credential::PrivateKeyJwt {
            key: secret(Secrets::OAUTH_CLIENT_PRIVATE_KEY, "private key")?,
            algorithm,
        },
        ClientAuth::WorkloadIdentity => Credential::WorkloadIdentity,
    })
}
