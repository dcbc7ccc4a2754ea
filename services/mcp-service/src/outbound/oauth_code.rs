//! OAuth 2.1 authorization code with PKCE for integrations whose servers use
//! the MCP authorization specification, per user, with `rmcp`'s
//! authorization manager: protected resource metadata (from the server's 401
//! challenge), authorization server metadata, client registration
//! (pre-registered, client ID metadata document, dynamic), the `resource`
//! parameter, `iss` validation, refresh. Every request goes through
//! [`PolicyOAuthHttp`]; grants are sealed in [`SqlOAuthStore`].

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, CredentialRefreshGuard,
    CredentialStore, InMemoryCredentialStore, InMemoryStateStore, OAuthClientConfig, StateStore,
    StoredCredentials,
};
use secrecy::ExposeSecret;

use super::{
    http_client::check_request_url,
    oauth_http::PolicyOAuthHttp,
    oauth_store::{ClientRegistration, Grant, GrantKey, Pending, SqlOAuthStore},
};
use crate::domain::{
    address_policy::AddressPolicy,
    integration::{
        AuthConfig, Integration, IntegrationId, OAuthCodeConfig, ORGANIZATION_GRANT_USER, OrgId,
        Secrets, TransportConfig,
    },
    ports::{
        AuthorizationAnswer, AuthorizationError, Authorizations, CallError, StartedAuthorization,
    },
};

/// How mcp-service names itself when it registers as a client.
const CLIENT_NAME: &str = "Switchboard";

/// The authorization code flows of every integration and user.
#[derive(Clone)]
pub struct AuthorizationCodeFlows {
    http: Arc<PolicyOAuthHttp>,
    probe: reqwest::Client,
    policy: Arc<AddressPolicy>,
    store: SqlOAuthStore,
    refreshes: RefreshLocks,
}

/// One lock per user grant, held across a refresh and its save, so that two
/// sessions of one user never refresh at once and lose each other's tokens.
type RefreshLocks = Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>;

impl std::fmt::Debug for AuthorizationCodeFlows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationCodeFlows")
            .finish_non_exhaustive()
    }
}

/// The error and its causes, for the admin (never a token: rmcp's errors
/// name URLs and reasons, and tokens travel in no error).
fn failed(error: AuthError) -> AuthorizationError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    AuthorizationError::Failed(message)
}

/// The MCP endpoint and flow settings of a per-user integration.
fn per_user(integration: &Integration) -> Result<(&str, &OAuthCodeConfig), AuthorizationError> {
    match (&integration.transport, &integration.auth) {
        (TransportConfig::StreamableHttp { url }, AuthConfig::OAuthAuthorizationCode(config)) => {
            Ok((url, config))
        }
        _ => Err(AuthorizationError::NotPerUser),
    }
}

impl AuthorizationCodeFlows {
    /// Flows requesting through `http`, probing MCP servers for their
    /// challenge with `probe`, storing in `store`.
    pub fn new(
        http: PolicyOAuthHttp,
        probe: reqwest::Client,
        policy: Arc<AddressPolicy>,
        store: SqlOAuthStore,
    ) -> Self {
        Self {
            http: Arc::new(http),
            probe,
            policy,
            store,
            refreshes: RefreshLocks::default(),
        }
    }

    fn refresh_lock(&self, key: &GrantKey) -> Arc<tokio::sync::Mutex<()>> {
        let name = String::from_utf8_lossy(&key.binding("refresh")).into_owned();
        self.refreshes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(name)
            .or_default()
            .clone()
    }

    /// A manager for the MCP server at `url` that has read the authorization
    /// server's metadata (from `challenge` when given).
    async fn manager(
        &self,
        url: &str,
        challenge: Option<&str>,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthorizationError> {
        let mut manager = AuthorizationManager::new_with_oauth_http_client(url, self.http.clone())
            .await
            .map_err(failed)?;
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(failed)?;
        manager.set_metadata(resolution.metadata.clone());
        Ok((manager, resolution.metadata))
    }

    /// The server's `WWW-Authenticate` challenge to an unauthenticated
    /// request, if it sends one.
    async fn challenge(&self, url: &str) -> Result<Option<String>, AuthorizationError> {
        check_request_url(&self.policy, url)
            .map_err(|e| AuthorizationError::Failed(e.to_string()))?;
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
        let response = self
            .probe
            .post(url)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .json(&body)
            .timeout(std::time::Duration::from_secs(30))
            .send()
            .await
            .map_err(|e| {
                AuthorizationError::Failed(format!(
                    "the MCP server is unreachable: {}",
                    e.without_url()
                ))
            })?;
        Ok(response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned))
    }

    /// The client to authorize with: pre-registered, a client ID metadata
    /// document where supported, or one registered dynamically.
    async fn client(
        &self,
        manager: &mut AuthorizationManager,
        metadata: &AuthorizationMetadata,
        integration: &Integration,
        config: &OAuthCodeConfig,
        scopes: &[String],
    ) -> Result<ClientRegistration, AuthorizationError> {
        let registration = |client_id: String, client_secret: Option<String>| ClientRegistration {
            client_id,
            client_secret,
            redirect_uri: config.redirect_uri.clone(),
        };
        if let Some(client_id) = &config.client_id {
            let secret = integration
                .secrets
                .get(Secrets::OAUTH_CLIENT_SECRET)
                .map(|s| s.expose_secret().to_owned());
            return Ok(registration(client_id.clone(), secret));
        }
        let metadata_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        if let Some(url) = config
            .client_metadata_url
            .as_ref()
            .filter(|_| metadata_documents)
        {
            return Ok(registration(url.clone(), None));
        }
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client(CLIENT_NAME, &config.redirect_uri, &scope_refs)
            .await
            .map_err(failed)?;
        Ok(registration(registered.client_id, registered.client_secret))
    }

    /// The scopes to ask `key`'s user for: those the server's challenge or
    /// metadata name, the configured ones, and (asking again, on a step-up
    /// say) those granted before.
    async fn scopes(
        &self,
        manager: &AuthorizationManager,
        config: &OAuthCodeConfig,
        key: &GrantKey,
    ) -> Result<Vec<String>, AuthorizationError> {
        let granted = self
            .store
            .grant(key)
            .await?
            .and_then(|grant| grant.credentials)
            .map(|credentials| credentials.granted_scopes)
            .unwrap_or_default();
        let mut scopes = manager.select_initial_scopes(&[]).await;
        for scope in config.scopes.iter().chain(&granted) {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        Ok(scopes)
    }

    /// A manager ready to hand out `key`'s tokens, refreshing them (and
    /// sealing the refreshed ones) as they near expiry.
    pub async fn session_manager(
        &self,
        integration: &Integration,
        user: &str,
    ) -> Result<AuthorizationManager, CallError> {
        let (url, _) = per_user(integration).map_err(|e| CallError::Connect(e.to_string()))?;
        let key = GrantKey {
            org: integration.org_id.clone(),
            integration: integration.id,
            user: user.to_owned(),
        };
        let grant = self
            .store
            .grant(&key)
            .await
            .map_err(|e| {
                CallError::Connect(format!("the stored authorization is unreadable: {e}"))
            })?
            .filter(|grant| {
                grant.integration_version == integration.updated_at && grant.credentials.is_some()
            })
            .ok_or(CallError::AuthorizationRequired(None))?;
        let mut manager = AuthorizationManager::new_with_oauth_http_client(url, self.http.clone())
            .await
            .map_err(|e| CallError::Connect(e.to_string()))?;
        manager.set_metadata(grant.metadata.clone());
        manager
            .configure_client(client_config(&grant.client))
            .map_err(|e| CallError::Connect(e.to_string()))?;
        manager.set_credential_store(SealedCredentials {
            store: self.store.clone(),
            refresh: self.refresh_lock(&key),
            key,
        });
        Ok(manager)
    }
}

/// The `state` parameter of an authorization URL.
fn state_of(authorization_url: &str) -> Result<String, AuthorizationError> {
    url::Url::parse(authorization_url)
        .ok()
        .and_then(|url| {
            url.query_pairs()
                .find(|(name, _)| name == "state")
                .map(|(_, value)| value.into_owned())
        })
        .ok_or_else(|| AuthorizationError::Failed("the authorization URL has no state".into()))
}

fn client_config(client: &ClientRegistration) -> OAuthClientConfig {
    let mut config = OAuthClientConfig::new(client.client_id.clone(), client.redirect_uri.clone());
    config.client_secret = client.client_secret.clone();
    config
}

#[async_trait]
impl Authorizations for AuthorizationCodeFlows {
    async fn start(
        &self,
        integration: &Integration,
        user: &str,
        challenge: Option<&str>,
    ) -> Result<StartedAuthorization, AuthorizationError> {
        let (url, config) = per_user(integration)?;
        let challenge = match challenge {
            Some(challenge) => Some(challenge.to_owned()),
            None => self.challenge(url).await?,
        };
        let (mut manager, metadata) = self.manager(url, challenge.as_deref()).await?;
        // Kept under the user who started it, whoever's grant it makes.
        let key = GrantKey {
            org: integration.org_id.clone(),
            integration: integration.id,
            user: user.to_owned(),
        };
        let grant_key = GrantKey {
            user: integration.grant_user(user).to_owned(),
            ..key.clone()
        };
        let scopes = self.scopes(&manager, config, &grant_key).await?;
        let client = self
            .client(&mut manager, &metadata, integration, config, &scopes)
            .await?;
        let mut client_config = client_config(&client);
        client_config.scopes = scopes.clone();
        manager.configure_client(client_config).map_err(failed)?;
        let states = InMemoryStateStore::new();
        manager.set_state_store(states.clone());
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let authorization_url = manager
            .get_authorization_url(&scope_refs)
            .await
            .map_err(failed)?;
        let state = state_of(&authorization_url)?;
        let stored = states.load(&state).await.map_err(failed)?.ok_or_else(|| {
            AuthorizationError::Failed("the authorization state was not kept".into())
        })?;
        let pending = Pending {
            grant: Grant {
                integration_version: integration.updated_at,
                resource_url: url.to_owned(),
                challenge,
                metadata,
                client,
                credentials: None,
            },
            state: stored,
            organization_wide: config.organization_wide,
        };
        self.store.save_pending(&state, &key, &pending).await?;
        Ok(StartedAuthorization {
            authorization_url,
            state,
        })
    }

    async fn complete(
        &self,
        org: &OrgId,
        user: &str,
        answer: AuthorizationAnswer,
    ) -> Result<IntegrationId, AuthorizationError> {
        let (mut key, pending) = self
            .store
            .take_pending(&answer.state, org, user)
            .await?
            .ok_or(AuthorizationError::UnknownState)?;
        if pending.organization_wide {
            key.user = ORGANIZATION_GRANT_USER.to_owned();
        }
        let mut grant = pending.grant;
        // The same discovery as at the start, so that the token request
        // names the same resource the authorization request did.
        let (mut manager, _) = self
            .manager(&grant.resource_url, grant.challenge.as_deref())
            .await?;
        manager.set_metadata(grant.metadata.clone());
        manager
            .configure_client(client_config(&grant.client))
            .map_err(failed)?;
        let states = InMemoryStateStore::new();
        states
            .save(&answer.state, pending.state)
            .await
            .map_err(failed)?;
        manager.set_state_store(states);
        let credentials = InMemoryCredentialStore::new();
        manager.set_credential_store(credentials.clone());
        manager
            .exchange_code_for_token_with_issuer(
                &answer.code,
                &answer.state,
                answer.issuer.as_deref(),
            )
            .await
            .map_err(failed)?;
        grant.credentials = credentials.load().await.map_err(failed)?;
        self.store.save_grant(&key, &grant).await?;
        Ok(key.integration)
    }
}

/// One user's tokens as `rmcp` sees them, kept in their sealed grant.
struct SealedCredentials {
    store: SqlOAuthStore,
    key: GrantKey,
    refresh: Arc<tokio::sync::Mutex<()>>,
}

fn storage(error: anyhow::Error) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait]
impl CredentialStore for SealedCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let grant = self.store.grant(&self.key).await.map_err(storage)?;
        Ok(grant.and_then(|grant| grant.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(Some(credentials)).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(None).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let guard = self.refresh.clone().lock_owned().await;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }

    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        // A revoked refresh token: the user must authorize again.
        self.update(None).await
    }
}

impl SealedCredentials {
    async fn update(&self, credentials: Option<StoredCredentials>) -> Result<(), AuthError> {
        let Some(mut grant) = self.store.grant(&self.key).await.map_err(storage)? else {
            return Ok(());
        };
        grant.credentials = credentials;
        self.store
            .save_grant(&self.key, &grant)
            .await
            .map_err(storage)
    }
}
