//! OAuth authorization code grants and pending authorizations in SQL, each
//! sealed whole with the key ring (the metadata and client beside the
//! tokens), bound to the row it belongs to.

use std::sync::Arc;

use anyhow::Context as _;
use oauth2::TokenResponse as _;
use rmcp::transport::auth::{AuthorizationMetadata, StoredAuthorizationState, StoredCredentials};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sqlx::{AnyPool, Row};

use crate::domain::integration::{IntegrationId, OrgId};
use crate::outbound::oauth::dpop::DpopKey;
use crate::sealing::{KeyRing, Sealed};

/// How long a started authorization may be completed.
pub const PENDING_LIFETIME_MILLIS: i64 = 10 * 60 * 1000;

/// Whose grant: one user of one integration of one organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantKey {
    /// The organization.
    pub org: OrgId,
    /// The integration.
    pub integration: IntegrationId,
    /// The user.
    pub user: String,
}

impl GrantKey {
    pub(crate) fn binding(&self, what: &str) -> Vec<u8> {
        // Lengths first: no user id can make two keys' bindings equal.
        format!(
            "oauth-{what}/{}:{}/{}/{}:{}",
            self.org.0.len(),
            self.org.0,
            self.integration,
            self.user.len(),
            self.user
        )
        .into_bytes()
    }
}

/// The OAuth client an integration's users are authorized with.
#[derive(Clone, Serialize, Deserialize)]
pub struct ClientRegistration {
    /// The client id (pre-registered, a metadata document URL, or issued by
    /// dynamic registration).
    pub client_id: String,
    /// The client secret, when the client has one.
    pub client_secret: Option<String>,
    /// The redirect URI.
    pub redirect_uri: String,
}

impl std::fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// One user's grant: where tokens come from and the tokens (which
/// `StoredCredentials` never prints).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Grant {
    /// The integration version the grant was made for: a changed
    /// integration (another server, another client) needs a new one.
    pub integration_version: i64,
    /// The MCP server's URL (the resource).
    pub resource_url: String,
    /// The server's `WWW-Authenticate` challenge the flow started from.
    pub challenge: Option<String>,
    /// The authorization server's metadata.
    pub metadata: AuthorizationMetadata,
    /// The client.
    pub client: ClientRegistration,
    /// The user's tokens, once authorized.
    pub credentials: Option<StoredCredentials>,
    /// The authorization server refused these credentials' refresh token:
    /// kept (a concurrent refresh may be about to replace them) but not
    /// used; the user authorizes again.
    #[serde(default)]
    pub refresh_rejected: bool,
    /// The key the grant's tokens are bound to (DPoP), when the
    /// authorization server binds them: sealed with the tokens, which are
    /// useless without it.
    #[serde(default)]
    pub dpop_key: Option<DpopKey>,
    /// The resource is a team's own service (an HTTP API, a gRPC service),
    /// whose authorization server the integration pins: nothing is
    /// discovered from the service, and the token is asked for its URL.
    #[serde(default)]
    pub pinned_only: bool,
}

impl Grant {
    /// Tokens a call may use: present and not refused at refresh.
    pub fn usable_credentials(&self) -> Option<&StoredCredentials> {
        self.credentials.as_ref().filter(|_| !self.refresh_rejected)
    }

    /// The key to prove possession of the access token with, when the
    /// tokens are DPoP-bound: the grant has a key and the authorization
    /// server issued the token as a DPoP token (one it issued as a bearer
    /// token is used as one).
    pub fn dpop_bound_key(&self) -> Option<&DpopKey> {
        let token_type = self
            .credentials
            .as_ref()?
            .token_response
            .as_ref()
            .map(|response| response.token_type().as_ref().to_owned())?;
        self.dpop_key
            .as_ref()
            .filter(|_| token_type.eq_ignore_ascii_case("dpop"))
    }
}

/// A client registered dynamically for an integration, reused by all its
/// users' flows while the integration, the authorization server and the
/// redirect URI stay the same.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredClient {
    /// The integration version it was registered for.
    pub integration_version: i64,
    /// The authorization server's issuer (or, without one, its token endpoint).
    pub authorization_server: String,
    /// The client.
    pub client: ClientRegistration,
}

/// A started authorization still waiting to be completed.
#[derive(Debug, Clone)]
pub struct LivePending {
    /// Its `state`.
    pub state: String,
    /// The authorization.
    pub pending: Pending,
    /// When it was started (epoch millis).
    pub created_at: i64,
}

/// A started authorization: the grant it leads to and its PKCE state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    /// The grant, without credentials yet.
    pub grant: Grant,
    /// The PKCE verifier, `state` and expected issuer.
    pub state: StoredAuthorizationState,
    /// Whether the grant is the organization's (an admin connecting an
    /// organization-wide integration) rather than the starting user's.
    #[serde(default)]
    pub organization_wide: bool,
    /// The authorization URL handed out, returned again to a start while
    /// this authorization is live.
    #[serde(default)]
    pub authorization_url: Option<String>,
}

/// Grants and pending authorizations over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlOAuthStore {
    pool: AnyPool,
    keys: Arc<KeyRing>,
}

impl SqlOAuthStore {
    /// A store over `pool`, sealing with `keys`.
    pub fn new(pool: AnyPool, keys: Arc<KeyRing>) -> Self {
        Self { pool, keys }
    }

    fn seal<T: Serialize>(&self, value: &T, aad: &[u8]) -> anyhow::Result<Sealed> {
        let plaintext = serde_json::to_vec(value).context("failed to encode an OAuth record")?;
        Ok(self.keys.seal(&plaintext, aad)?)
    }

    fn open<T: DeserializeOwned>(&self, sealed: &Sealed, aad: &[u8]) -> anyhow::Result<T> {
        let plaintext = self.keys.open(sealed, aad)?;
        serde_json::from_slice(&plaintext).context("a sealed OAuth record is not valid")
    }

    /// The grant of `key`, if any.
    pub async fn grant(&self, key: &GrantKey) -> anyhow::Result<Option<Grant>> {
        Ok(self.versioned_grant(key).await?.map(|(grant, _)| grant))
    }

    /// The grant of `key` and its row's version, if any.
    pub async fn versioned_grant(&self, key: &GrantKey) -> anyhow::Result<Option<(Grant, i64)>> {
        let row = sqlx::query(
            "SELECT ciphertext, key_id, version FROM oauth_grants \
             WHERE org_id = $1 AND integration_id = $2 AND user_id = $3",
        )
        .bind(key.org.0.clone())
        .bind(key.integration.to_string())
        .bind(key.user.clone())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let sealed = Sealed {
            key_id: row.try_get("key_id")?,
            bytes: row.try_get("ciphertext")?,
        };
        let version: i64 = row.try_get("version")?;
        Ok(Some((self.open(&sealed, &key.binding("grant"))?, version)))
    }

    /// Replaces `key`'s grant only while its row is still at `version`
    /// (compare-and-swap: another replica's write in between wins); whether
    /// it was written.
    pub async fn replace_grant(
        &self,
        key: &GrantKey,
        grant: &Grant,
        version: i64,
    ) -> anyhow::Result<bool> {
        let sealed = self.seal(grant, &key.binding("grant"))?;
        let written = sqlx::query(
            "UPDATE oauth_grants SET ciphertext = $4, key_id = $5, updated_at = $6, \
             version = version + 1 \
             WHERE org_id = $1 AND integration_id = $2 AND user_id = $3 AND version = $7",
        )
        .bind(key.org.0.clone())
        .bind(key.integration.to_string())
        .bind(key.user.clone())
        .bind(sealed.bytes)
        .bind(sealed.key_id)
        .bind(switchboard_db::now_millis())
        .bind(version)
        .execute(&self.pool)
        .await?;
        Ok(written.rows_affected() == 1)
    }

    /// Stores `grant` as `key`'s.
    pub async fn save_grant(&self, key: &GrantKey, grant: &Grant) -> anyhow::Result<()> {
        let sealed = self.seal(grant, &key.binding("grant"))?;
        sqlx::query(
            "INSERT INTO oauth_grants (org_id, integration_id, user_id, ciphertext, key_id, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (org_id, integration_id, user_id) \
             DO UPDATE SET ciphertext = $4, key_id = $5, updated_at = $6, \
             version = oauth_grants.version + 1",
        )
        .bind(key.org.0.clone())
        .bind(key.integration.to_string())
        .bind(key.user.clone())
        .bind(sealed.bytes)
        .bind(sealed.key_id)
        .bind(switchboard_db::now_millis())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records a started authorization under its `state`, dropping those
    /// past their lifetime and `replacing` (the key's live one the caller
    /// chose to replace). A key has one live authorization: when another
    /// start recorded one first, nothing is written and that one is returned.
    pub async fn save_pending(
        &self,
        state: &str,
        key: &GrantKey,
        pending: &Pending,
        replacing: Option<&str>,
    ) -> anyhow::Result<Option<LivePending>> {
        let now = switchboard_db::now_millis();
        sqlx::query("DELETE FROM oauth_pending WHERE created_at < $1")
            .bind(now - PENDING_LIFETIME_MILLIS)
            .execute(&self.pool)
            .await?;
        if let Some(replaced) = replacing {
            sqlx::query("DELETE FROM oauth_pending WHERE state = $1")
                .bind(replaced.to_owned())
                .execute(&self.pool)
                .await?;
        }
        let sealed = self.seal(pending, &pending_binding(state, key))?;
        let inserted = sqlx::query(
            "INSERT INTO oauth_pending (state, org_id, integration_id, user_id, ciphertext, key_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        )
        .bind(state.to_owned())
        .bind(key.org.0.clone())
        .bind(key.integration.to_string())
        .bind(key.user.clone())
        .bind(sealed.bytes)
        .bind(sealed.key_id)
        .bind(now)
        .execute(&self.pool)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(None);
        }
        self.live_pending(key).await
    }

    /// The authorization `key`'s user started and has not completed, while
    /// it is live.
    pub async fn live_pending(&self, key: &GrantKey) -> anyhow::Result<Option<LivePending>> {
        let row = sqlx::query(
            "SELECT state, ciphertext, key_id, created_at FROM oauth_pending \
             WHERE org_id = $1 AND integration_id = $2 AND user_id = $3 AND created_at >= $4",
        )
        .bind(key.org.0.clone())
        .bind(key.integration.to_string())
        .bind(key.user.clone())
        .bind(switchboard_db::now_millis() - PENDING_LIFETIME_MILLIS)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let state: String = row.try_get("state")?;
        let sealed = Sealed {
            key_id: row.try_get("key_id")?,
            bytes: row.try_get("ciphertext")?,
        };
        let pending = self.open(&sealed, &pending_binding(&state, key))?;
        Ok(Some(LivePending {
            state,
            pending,
            created_at: row.try_get("created_at")?,
        }))
    }

    /// The client registered dynamically for `integration`, if any.
    pub async fn client(
        &self,
        org: &OrgId,
        integration: IntegrationId,
    ) -> anyhow::Result<Option<StoredClient>> {
        let row = sqlx::query(
            "SELECT ciphertext, key_id FROM oauth_clients WHERE org_id = $1 AND integration_id = $2",
        )
        .bind(org.0.clone())
        .bind(integration.to_string())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let sealed = Sealed {
            key_id: row.try_get("key_id")?,
            bytes: row.try_get("ciphertext")?,
        };
        self.open(&sealed, &client_binding(org, integration))
            .map(Some)
    }

    /// Stores `client` as `integration`'s, replacing an older one.
    pub async fn save_client(
        &self,
        org: &OrgId,
        integration: IntegrationId,
        client: &StoredClient,
    ) -> anyhow::Result<()> {
        let sealed = self.seal(client, &client_binding(org, integration))?;
        sqlx::query(
            "INSERT INTO oauth_clients (org_id, integration_id, ciphertext, key_id, updated_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (org_id, integration_id) \
             DO UPDATE SET ciphertext = $3, key_id = $4, updated_at = $5",
        )
        .bind(org.0.clone())
        .bind(integration.to_string())
        .bind(sealed.bytes)
        .bind(sealed.key_id)
        .bind(switchboard_db::now_millis())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Takes the authorization `org`'s `user` started under `state`: it is
    /// removed, so it completes once. `None` when there is none, it is
    /// another user's, or its lifetime is over.
    pub async fn take_pending(
        &self,
        state: &str,
        org: &OrgId,
        user: &str,
    ) -> anyhow::Result<Option<(GrantKey, Pending)>> {
        let row = sqlx::query(
            "SELECT integration_id, ciphertext, key_id, created_at FROM oauth_pending \
             WHERE state = $1 AND org_id = $2 AND user_id = $3",
        )
        .bind(state.to_owned())
        .bind(org.0.clone())
        .bind(user.to_owned())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let taken = sqlx::query("DELETE FROM oauth_pending WHERE state = $1")
            .bind(state.to_owned())
            .execute(&self.pool)
            .await?;
        let created_at: i64 = row.try_get("created_at")?;
        if taken.rows_affected() != 1
            || created_at < switchboard_db::now_millis() - PENDING_LIFETIME_MILLIS
        {
            return Ok(None);
        }
        let integration: String = row.try_get("integration_id")?;
        let key = GrantKey {
            org: org.clone(),
            integration: IntegrationId::parse("integration_id", &integration)
                .map_err(|v| anyhow::anyhow!(v.description))?,
            user: user.to_owned(),
        };
        let sealed = Sealed {
            key_id: row.try_get("key_id")?,
            bytes: row.try_get("ciphertext")?,
        };
        let pending = self.open(&sealed, &pending_binding(state, &key))?;
        Ok(Some((key, pending)))
    }
}

fn client_binding(org: &OrgId, integration: IntegrationId) -> Vec<u8> {
    format!("oauth-client/{}:{}/{integration}", org.0.len(), org.0).into_bytes()
}

fn pending_binding(state: &str, key: &GrantKey) -> Vec<u8> {
    let mut binding = key.binding("pending");
    binding.extend_from_slice(format!("/{state}").as_bytes());
    binding
}
