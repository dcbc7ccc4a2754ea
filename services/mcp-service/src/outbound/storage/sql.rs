//! Integrations in SQL (SQLite or PostgreSQL through `sqlx::Any`), secrets
//! sealed with the key ring before they reach the database.

use std::sync::Arc;

use anyhow::Context as _;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, Row, any::AnyRow};

use crate::domain::{
    guardrails::GuardrailSettings,
    integration::{
        AuthConfig, DisplayName, Integration, IntegrationId, IntegrationKind, OrgId, Secrets, Slug,
        Timeouts,
    },
    ports::{IntegrationHead, IntegrationRepository, ListQuery, RepositoryError},
    transport::Transport,
};
use crate::sealing::{KeyRing, Sealed};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// mcp-service's schema, per database.
pub const MIGRATIONS: switchboard_db::Migrations = switchboard_db::Migrations {
    sqlite: &SQLITE_MIGRATIONS,
    postgres: &POSTGRES_MIGRATIONS,
};

/// The non-secret configuration, stored as JSON.
#[derive(Serialize, Deserialize)]
struct StoredConfig {
    transport: Transport,
    auth: AuthConfig,
    timeouts: Timeouts,
    #[serde(default, skip_serializing_if = "GuardrailSettings::is_empty")]
    guardrails: GuardrailSettings,
}

/// [`IntegrationRepository`] over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlIntegrationRepository {
    pool: AnyPool,
    keys: Arc<KeyRing>,
}

const COLUMNS: &str = "id, org_id, slug, display_name, kind, predefined_id, enabled, \
     config_json, secrets_ciphertext, secrets_key_id, created_at, updated_at";

impl SqlIntegrationRepository {
    /// A repository over `pool`, sealing secrets with `keys`.
    pub fn new(pool: AnyPool, keys: Arc<KeyRing>) -> Self {
        Self { pool, keys }
    }

    /// The organization, id and auth configuration of every integration
    /// whose auth is client credentials (secrets left sealed): what the
    /// start-up report of credential destinations reads.
    pub async fn client_credentials_auth(
        &self,
    ) -> anyhow::Result<Vec<(OrgId, IntegrationId, AuthConfig)>> {
        let rows = sqlx::query(
            "SELECT id, org_id, config_json FROM integrations \
             WHERE config_json LIKE '%client_credentials%' ORDER BY org_id, id",
        )
        .fetch_all(&self.pool)
        .await
        .context("failed to read the integrations")?;
        let mut found = Vec::with_capacity(rows.len());
        for row in rows {
            let id: String = row.try_get("id")?;
            let id = IntegrationId::parse("id", &id).map_err(|v| anyhow::anyhow!(v.description))?;
            let config: StoredConfig =
                serde_json::from_str(&row.try_get::<String, _>("config_json")?)
                    .context("stored integration configuration is not valid")?;
            found.push((OrgId(row.try_get("org_id")?), id, config.auth));
        }
        Ok(found)
    }

    /// Secrets are bound to their row: a ciphertext moved to another
    /// integration or organization does not open.
    fn binding(org: &OrgId, id: IntegrationId) -> Vec<u8> {
        format!("integration/{org}/{id}").into_bytes()
    }

    fn seal(&self, integration: &Integration) -> anyhow::Result<Option<Sealed>> {
        if integration.secrets.is_empty() {
            return Ok(None);
        }
        let sealed = self.keys.seal(
            &integration.secrets.to_plaintext(),
            &Self::binding(&integration.org_id, integration.id),
        )?;
        Ok(Some(sealed))
    }

    fn decode(&self, row: &AnyRow) -> anyhow::Result<Integration> {
        let id: String = row.try_get("id")?;
        let id = IntegrationId::parse("id", &id).map_err(|v| anyhow::anyhow!(v.description))?;
        let org_id = OrgId(row.try_get("org_id")?);
        let config: StoredConfig = serde_json::from_str(&row.try_get::<String, _>("config_json")?)
            .context("stored integration configuration is not valid")?;
        let kind = match (
            row.try_get::<String, _>("kind")?.as_str(),
            row.try_get::<Option<String>, _>("predefined_id")?,
        ) {
            ("predefined", Some(catalog_id)) => IntegrationKind::Predefined(catalog_id),
            _ => IntegrationKind::Custom,
        };
        let secrets = match (
            row.try_get::<Option<Vec<u8>>, _>("secrets_ciphertext")?,
            row.try_get::<Option<String>, _>("secrets_key_id")?,
        ) {
            (Some(bytes), Some(key_id)) => {
                let plaintext = self
                    .keys
                    .open(&Sealed { key_id, bytes }, &Self::binding(&org_id, id))?;
                Secrets::from_plaintext(&plaintext).context("sealed secrets are not valid")?
            }
            _ => Secrets::default(),
        };
        let stored_name = |column: &str| -> anyhow::Result<String> { Ok(row.try_get(column)?) };
        Ok(Integration {
            id,
            display_name: DisplayName::parse("display_name", &stored_name("display_name")?)
                .map_err(|v| anyhow::anyhow!(v.description))?,
            slug: Slug::parse("slug", &stored_name("slug")?)
                .map_err(|v| anyhow::anyhow!(v.description))?,
            org_id,
            kind,
            transport: config.transport,
            auth: config.auth,
            enabled: row.try_get::<i64, _>("enabled")? != 0,
            timeouts: config.timeouts,
            guardrails: config.guardrails,
            secrets,
            created_at: row.try_get("created_at")?,
            updated_at: row.try_get("updated_at")?,
        })
    }
}

fn config_json(integration: &Integration) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&StoredConfig {
        transport: integration.transport.clone(),
        auth: integration.auth.clone(),
        timeouts: integration.timeouts,
        guardrails: integration.guardrails.clone(),
    })?)
}

fn write_error(error: sqlx::Error) -> RepositoryError {
    match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => RepositoryError::SlugTaken,
        _ => RepositoryError::Other(
            anyhow::Error::new(error).context("failed to write an integration"),
        ),
    }
}

fn read_error(error: sqlx::Error) -> RepositoryError {
    RepositoryError::Other(anyhow::Error::new(error).context("failed to read integrations"))
}

#[async_trait]
impl IntegrationRepository for SqlIntegrationRepository {
    async fn insert(&self, integration: &Integration) -> Result<(), RepositoryError> {
        let sealed = self.seal(integration)?;
        let (kind, predefined_id) = match &integration.kind {
            IntegrationKind::Custom => ("custom", None),
            IntegrationKind::Predefined(id) => ("predefined", Some(id.clone())),
        };
        sqlx::query(&format!(
            "INSERT INTO integrations ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        ))
        .bind(integration.id.to_string())
        .bind(integration.org_id.0.clone())
        .bind(integration.slug.as_str().to_owned())
        .bind(integration.display_name.as_str().to_owned())
        .bind(kind)
        .bind(predefined_id)
        .bind(i64::from(integration.enabled))
        .bind(config_json(integration)?)
        .bind(sealed.as_ref().map(|s| s.bytes.clone()))
        .bind(sealed.map(|s| s.key_id))
        .bind(integration.created_at)
        .bind(integration.updated_at)
        .execute(&self.pool)
        .await
        .map_err(write_error)?;
        Ok(())
    }

    async fn get(
        &self,
        org: &OrgId,
        id: IntegrationId,
    ) -> Result<Option<Integration>, RepositoryError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM integrations WHERE org_id = $1 AND id = $2"
        ))
        .bind(org.0.clone())
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(read_error)?;
        Ok(row.map(|row| self.decode(&row)).transpose()?)
    }

    async fn find_by_slug(
        &self,
        org: &OrgId,
        slug: &Slug,
    ) -> Result<Option<Integration>, RepositoryError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM integrations WHERE org_id = $1 AND slug = $2"
        ))
        .bind(org.0.clone())
        .bind(slug.as_str().to_owned())
        .fetch_optional(&self.pool)
        .await
        .map_err(read_error)?;
        Ok(row.map(|row| self.decode(&row)).transpose()?)
    }

    async fn list(
        &self,
        org: &OrgId,
        query: &ListQuery,
    ) -> Result<Vec<Integration>, RepositoryError> {
        let (after_time, after_id) = query
            .after
            .map_or((i64::MIN, String::new()), |(t, id)| (t, id.to_string()));
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM integrations \
             WHERE org_id = $1 AND ($2 = 0 OR enabled = 1) \
               AND (created_at > $3 OR (created_at = $3 AND id > $4)) \
             ORDER BY created_at, id LIMIT $5"
        ))
        .bind(org.0.clone())
        .bind(i64::from(query.enabled_only))
        .bind(after_time)
        .bind(after_id)
        .bind(i64::from(query.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(read_error)?;
        Ok(rows
            .iter()
            .map(|row| self.decode(row))
            .collect::<anyhow::Result<_>>()?)
    }

    async fn update(&self, integration: &Integration) -> Result<bool, RepositoryError> {
        let sealed = self.seal(integration)?;
        let result = sqlx::query(
            "UPDATE integrations SET slug = $3, display_name = $4, enabled = $5, \
             config_json = $6, secrets_ciphertext = $7, secrets_key_id = $8, updated_at = $9 \
             WHERE org_id = $1 AND id = $2",
        )
        .bind(integration.org_id.0.clone())
        .bind(integration.id.to_string())
        .bind(integration.slug.as_str().to_owned())
        .bind(integration.display_name.as_str().to_owned())
        .bind(i64::from(integration.enabled))
        .bind(config_json(integration)?)
        .bind(sealed.as_ref().map(|s| s.bytes.clone()))
        .bind(sealed.map(|s| s.key_id))
        .bind(integration.updated_at)
        .execute(&self.pool)
        .await
        .map_err(write_error)?;
        Ok(result.rows_affected() > 0)
    }

    async fn heads(
        &self,
        org: &OrgId,
        ids: &[IntegrationId],
    ) -> Result<Vec<IntegrationHead>, RepositoryError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // One placeholder per id: a toolset's members are bounded (32 by
        // default), far below either database's limit on parameters.
        let placeholders = (2..ids.len() + 2)
            .map(|n| format!("${n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT id, slug, enabled FROM integrations \
             WHERE org_id = $1 AND id IN ({placeholders})"
        );
        let mut query = sqlx::query(&sql).bind(org.0.clone());
        for id in ids {
            query = query.bind(id.to_string());
        }
        let rows = query.fetch_all(&self.pool).await.map_err(read_error)?;
        Ok(rows
            .iter()
            .map(decode_head)
            .collect::<anyhow::Result<_>>()?)
    }

    async fn delete(&self, org: &OrgId, id: IntegrationId) -> Result<bool, RepositoryError> {
        let result = sqlx::query("DELETE FROM integrations WHERE org_id = $1 AND id = $2")
            .bind(org.0.clone())
            .bind(id.to_string())
            .execute(&self.pool)
            .await
            .map_err(write_error)?;
        // Its users' OAuth grants go with it.
        for table in ["oauth_grants", "oauth_pending", "oauth_clients"] {
            sqlx::query(&format!(
                "DELETE FROM {table} WHERE org_id = $1 AND integration_id = $2"
            ))
            .bind(org.0.clone())
            .bind(id.to_string())
            .execute(&self.pool)
            .await
            .map_err(write_error)?;
        }
        Ok(result.rows_affected() > 0)
    }
}

/// A row of `id`, `slug` and `enabled` as an [`IntegrationHead`].
fn decode_head(row: &AnyRow) -> anyhow::Result<IntegrationHead> {
    let id: String = row.try_get("id")?;
    let slug: String = row.try_get("slug")?;
    Ok(IntegrationHead {
        id: IntegrationId::parse("id", &id).map_err(|v| anyhow::anyhow!(v.description))?,
        slug: Slug::parse("slug", &slug).map_err(|v| anyhow::anyhow!(v.description))?,
        enabled: row.try_get::<i64, _>("enabled")? != 0,
    })
}
