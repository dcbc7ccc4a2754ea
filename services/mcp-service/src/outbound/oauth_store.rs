//! OAuth authorization code grants and pending authorizations in SQL, each
//! sealed whole with the key ring (the metadata and client beside the
//! tokens), bound to the row it belongs to.

use std::sync::Arc;

use anyhow::Context as _;
use rmcp::transport::auth::{AuthorizationMetadata, StoredAuthorizationState, StoredCredentials};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sqlx::{AnyPool, Row};

use super::secret_box::{KeyRing, Sealed};
use crate::domain::integration::{IntegrationId, OrgId};

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
        let row = sqlx::query(
            "SELECT ciphertext, key_id FROM oauth_grants \
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
        self.open(&sealed, &key.binding("grant")).map(Some)
    }

    /// Stores `grant` as `key`'s.
    pub async fn save_grant(&self, key: &GrantKey, grant: &Grant) -> anyhow::Result<()> {
        let sealed = self.seal(grant, &key.binding("grant"))?;
        sqlx::query(
            "INSERT INTO oauth_grants (org_id, integration_id, user_id, ciphertext, key_id, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (org_id, integration_id, user_id) \
             DO UPDATE SET ciphertext = $4, key_id = $5, updated_at = $6",
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
    /// past their lifetime.
    pub async fn save_pending(
        &self,
        state: &str,
        key: &GrantKey,
        pending: &Pending,
    ) -> anyhow::Result<()> {
        let now = switchboard_db::now_millis();
        sqlx::query("DELETE FROM oauth_pending WHERE created_at < $1")
            .bind(now - PENDING_LIFETIME_MILLIS)
            .execute(&self.pool)
            .await?;
        let sealed = self.seal(pending, &pending_binding(state, key))?;
        sqlx::query(
            "INSERT INTO oauth_pending (state, org_id, integration_id, user_id, ciphertext, key_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
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

fn pending_binding(state: &str, key: &GrantKey) -> Vec<u8> {
    let mut binding = key.binding("pending");
    binding.extend_from_slice(format!("/{state}").as_bytes());
    binding
}
