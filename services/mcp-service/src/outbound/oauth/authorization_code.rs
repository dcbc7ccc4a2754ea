//! OAuth 2.1 authorization code with PKCE for integrations whose servers use
//! the MCP authorization specification, per user, with `rmcp`'s
//! authorization manager: protected resource metadata (from the server's 401
//! challenge), authorization server metadata, client registration
//! (pre-registered, client ID metadata document, dynamic), the `resource`
//! parameter, `iss` validation, refresh. Every request goes through
//! [`PolicyOAuthHttp`]; grants are sealed in [`SqlOAuthStore`].

use std::{collections::HashMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, CredentialStore, InMemoryCredentialStore, InMemoryStateStore,
    OAuthClientConfig, OAuthHttpClient, StateStore,
};

use crate::domain::{
    address_policy::AddressPolicy,
    integration::{
        AuthConfig, Integration, IntegrationId, OAuthCodeConfig, ORGANIZATION_GRANT_USER, OrgId,
    },
    oauth_url::check_oauth_url,
    ports::{
        AuthorizationAnswer, AuthorizationError, Authorizations, CallError, StartedAuthorization,
    },
};
use crate::outbound::{
    oauth::client::{OAuthClients, failed},
    oauth::dpop::{self, DpopKey},
    oauth::dpop_http::DpopOAuthHttp,
    oauth::http::PolicyOAuthHttp,
    oauth::refresh::SealedCredentials,
    oauth::store::{ClientRegistration, Grant, GrantKey, LivePending, Pending, SqlOAuthStore},
};

mod discovery;

/// Least time between two new authorization flows of one user and
/// integration, by default; a start within it returns the live one.
pub const DEFAULT_START_INTERVAL: Duration = Duration::from_secs(10);

/// The authorization code flows of every integration and user.
#[derive(Clone)]
pub struct AuthorizationCodeFlows {
    http: Arc<PolicyOAuthHttp>,
    probe: reqwest::Client,
    policy: Arc<AddressPolicy>,
    store: SqlOAuthStore,
    clients: OAuthClients,
    refreshes: RefreshLocks,
    start_interval: Duration,
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

/// The MCP endpoint and flow settings of a per-user integration.
fn per_user(integration: &Integration) -> Result<(&str, &OAuthCodeConfig), AuthorizationError> {
    match (integration.transport.url(), &integration.auth) {
        (Some(url), AuthConfig::OAuthAuthorizationCode(config)) => Ok((url, config)),
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
            clients: OAuthClients::new(store.clone()),
            store,
            refreshes: RefreshLocks::default(),
            start_interval: DEFAULT_START_INTERVAL,
        }
    }

    /// Starts at most one new flow per user and integration per `interval`.
    pub fn with_start_interval(mut self, interval: Duration) -> Self {
        self.start_interval = interval;
        self
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

    /// The HTTP client of `grant`'s OAuth requests: with DPoP proofs at
    /// the token endpoint when its tokens are bound to a key.
    fn oauth_http(&self, grant: &Grant) -> Arc<dyn OAuthHttpClient> {
        match &grant.dpop_key {
            Some(key) => Arc::new(DpopOAuthHttp::new(
                self.http.clone(),
                key.clone(),
                &grant.metadata.token_endpoint,
            )),
            None => self.http.clone(),
        }
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

    /// The live authorization of a user to hand out again instead of a
    /// new one: for the same integration version, and either for the same
    /// challenge (or none) or started within the start interval (so a
    /// server varying its challenge starts at most one flow per interval).
    fn reusable(
        &self,
        live: &LivePending,
        integration: &Integration,
        challenge: Option<&str>,
    ) -> Option<StartedAuthorization> {
        let authorization_url = live.pending.authorization_url.clone()?;
        if live.pending.grant.integration_version != integration.updated_at {
            return None;
        }
        let interval = i64::try_from(self.start_interval.as_millis()).unwrap_or(i64::MAX);
        let young = switchboard_db::now_millis().saturating_sub(live.created_at) < interval;
        let same_challenge =
            challenge.is_none() || challenge == live.pending.grant.challenge.as_deref();
        (young || same_challenge).then(|| StartedAuthorization {
            authorization_url,
            state: live.state.clone(),
        })
    }

    /// A new authorization for `key`'s user: discovery, the client, the
    /// authorization URL (`https` only) and what completing it needs.
    async fn new_flow(
        &self,
        integration: &Integration,
        url: &str,
        config: &OAuthCodeConfig,
        key: &GrantKey,
        challenge: Option<&str>,
    ) -> Result<(StartedAuthorization, Pending), AuthorizationError> {
        check_oauth_url(&self.policy, &config.redirect_uri)
            .map_err(|e| AuthorizationError::Failed(format!("the redirect URI {e}")))?;
        let pinned_only = integration.transport.is_service();
        let (mut manager, metadata, challenge) = self
            .authorization_server(pinned_only, url, config, challenge)
            .await?;
        // A key for the tokens to be bound to, when the authorization
        // server binds them (made now: the grant carries it to whichever
        // replica completes the flow).
        let dpop_key = dpop::wanted_by(&metadata)
            .then(DpopKey::generate)
            .transpose()
            .map_err(|e| AuthorizationError::Failed(e.to_string()))?;
        let grant_key = GrantKey {
            user: integration.grant_user(&key.user).to_owned(),
            ..key.clone()
        };
        let scopes = self.scopes(&manager, config, &grant_key).await?;
        let client = self
            .clients
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
        check_oauth_url(&self.policy, &authorization_url)
            .map_err(|e| AuthorizationError::Failed(format!("the authorization URL {e}")))?;
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
                refresh_rejected: false,
                dpop_key,
                pinned_only,
            },
            state: stored,
            organization_wide: config.organization_wide,
            authorization_url: Some(authorization_url.clone()),
        };
        let started = StartedAuthorization {
            authorization_url,
            state,
        };
        Ok((started, pending))
    }

    /// A manager ready to hand out `key`'s tokens, refreshing them (and
    /// sealing the refreshed ones) as they near expiry, the key the access
    /// token is bound to when it is DPoP-bound, and the token it readied.
    pub async fn session_manager(
        &self,
        integration: &Integration,
        user: &str,
    ) -> Result<(AuthorizationManager, Option<DpopKey>, String), CallError> {
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
                grant.integration_version == integration.updated_at
                    && grant.usable_credentials().is_some()
            })
            .ok_or(CallError::AuthorizationRequired(None))?;
        let mut manager =
            AuthorizationManager::new_with_oauth_http_client(url, self.oauth_http(&grant))
                .await
                .map_err(|e| CallError::Connect(e.to_string()))?;
        manager.set_metadata(grant.metadata.clone());
        manager
            .configure_client(client_config(&grant.client))
            .map_err(|e| CallError::Connect(e.to_string()))?;
        let refresh = self.refresh_lock(&key);
        manager.set_credential_store(SealedCredentials::new(self.store.clone(), key, refresh));
        let token = ready(&manager).await?;
        Ok((manager, grant.dpop_bound_key().cloned(), token))
    }

    /// `user`'s access token for `integration` as [`Self::session_manager`]
    /// readies it (a team's own service's call, which keeps no session),
    /// and the key it is bound to when it is DPoP-bound.
    pub async fn access_token(
        &self,
        integration: &Integration,
        user: &str,
    ) -> Result<(String, Option<DpopKey>), CallError> {
        let (_, dpop, token) = self.session_manager(integration, user).await?;
        Ok((token, dpop))
    }
}

/// Makes sure `manager` holds a usable access token before a session
/// starts, refreshing it when due. A refresh refused because another
/// replica refreshed first leaves that replica's tokens in the grant, so
/// the token is read once more before the user is asked to authorize
/// again (a grant truly refused reads as none, without a request).
async fn ready(manager: &AuthorizationManager) -> Result<String, CallError> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match manager.get_access_token().await {
            Ok(token) => return Ok(token),
            Err(AuthError::AuthorizationRequired) if attempts < 2 => {}
            Err(AuthError::AuthorizationRequired) => {
                return Err(CallError::AuthorizationRequired(None));
            }
            Err(error) => {
                return Err(CallError::Connect(format!(
                    "the OAuth tokens could not be refreshed: {}",
                    crate::outbound::oauth::client::summary(&error.to_string())
                )));
            }
        }
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
        // Kept under the user who started it, whoever's grant it makes.
        let key = GrantKey {
            org: integration.org_id.clone(),
            integration: integration.id,
            user: user.to_owned(),
        };
        let live = self.store.live_pending(&key).await?;
        if let Some(started) = live
            .as_ref()
            .and_then(|live| self.reusable(live, integration, challenge))
        {
            return Ok(started);
        }
        let (started, pending) = self
            .new_flow(integration, url, config, &key, challenge)
            .await?;
        let replacing = live.as_ref().map(|live| live.state.as_str());
        let saved = self
            .store
            .save_pending(&started.state, &key, &pending, replacing)
            .await?;
        match saved {
            None => Ok(started),
            // Another start of this user's recorded its flow first.
            Some(winner) => self.reusable(&winner, integration, None).ok_or_else(|| {
                AuthorizationError::Failed("an authorization was started at the same time".into())
            }),
        }
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
        let mut manager = self.resumed(&grant).await?;
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
