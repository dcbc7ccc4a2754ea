//! Policy versions in SQL (SQLite or PostgreSQL through `sqlx::Any`): every
//! write a new row, a delete a row marking the policy deleted.

use anyhow::Context as _;
use async_trait::async_trait;
use sqlx::{AnyPool, Row, any::AnyRow};

use crate::domain::{
    integration::OrgId,
    policy::{
        model::{PolicyBody, PolicyName, PolicyVersion},
        ports::{PolicyRepository, PolicyStoreError},
    },
};

/// [`PolicyRepository`] over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlPolicyRepository {
    pool: AnyPool,
}

const COLUMNS: &str = "name, version, body_json, updated_by, updated_at";

/// The newest row of a policy: its version and whether it marks a delete.
struct Latest {
    version: i64,
    deleted: bool,
    body_json: String,
}

impl SqlPolicyRepository {
    /// A repository over `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    async fn latest(&self, org: &OrgId, name: &PolicyName) -> anyhow::Result<Option<Latest>> {
        let row = sqlx::query(
            "SELECT version, deleted, body_json FROM policy_versions \
             WHERE org_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1",
        )
        .bind(&org.0)
        .bind(name.as_str())
        .fetch_optional(&self.pool)
        .await
        .context("failed to read a policy's latest version")?;
        row.map(|row| {
            Ok(Latest {
                version: row.try_get("version")?,
                deleted: row.try_get::<i64, _>("deleted")? != 0,
                body_json: row.try_get("body_json")?,
            })
        })
        .transpose()
    }

    /// Inserts a row; a row of that version written meanwhile (by another
    /// replica) makes the write stale.
    async fn insert(
        &self,
        org: &OrgId,
        name: &PolicyName,
        version: i64,
        body_json: &str,
        deleted: bool,
        updated_by: &str,
    ) -> Result<i64, PolicyStoreError> {
        let now = switchboard_db::now_millis();
        let inserted = sqlx::query(
            "INSERT INTO policy_versions \
             (org_id, name, version, body_json, deleted, updated_by, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&org.0)
        .bind(name.as_str())
        .bind(version)
        .bind(body_json)
        .bind(i64::from(deleted))
        .bind(updated_by)
        .bind(now)
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(now),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                Err(PolicyStoreError::Stale {
                    name: name.to_string(),
                    expected: version - 1,
                    current: version,
                })
            }
            Err(error) => Err(anyhow::Error::new(error)
                .context("failed to write a policy version")
                .into()),
        }
    }
}

fn decode(row: &AnyRow) -> anyhow::Result<PolicyVersion> {
    let name: String = row.try_get("name")?;
    let body: PolicyBody = serde_json::from_str(&row.try_get::<String, _>("body_json")?)
        .context("stored policy is not valid")?;
    Ok(PolicyVersion {
        name: PolicyName::parse(&name).context("stored policy name is not valid")?,
        version: row.try_get("version")?,
        body,
        updated_by: row.try_get("updated_by")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn decode_all(rows: &[AnyRow]) -> Result<Vec<PolicyVersion>, PolicyStoreError> {
    Ok(rows.iter().map(decode).collect::<anyhow::Result<_>>()?)
}

#[async_trait]
impl PolicyRepository for SqlPolicyRepository {
    async fn put(
        &self,
        org: &OrgId,
        name: &PolicyName,
        body: &PolicyBody,
        expected_version: i64,
        updated_by: &str,
    ) -> Result<PolicyVersion, PolicyStoreError> {
        let latest = self.latest(org, name).await?;
        let live = latest.as_ref().filter(|l| !l.deleted).map(|l| l.version);
        let version = match (expected_version, live) {
            (0, Some(_)) => return Err(PolicyStoreError::Exists(name.to_string())),
            (0, None) => latest.map_or(1, |l| l.version + 1),
            (_, None) => return Err(PolicyStoreError::NotFound),
            (expected, Some(current)) if expected != current => {
                return Err(PolicyStoreError::Stale {
                    name: name.to_string(),
                    expected,
                    current,
                });
            }
            (expected, Some(_)) => expected + 1,
        };
        let body_json = serde_json::to_string(body).context("failed to encode a policy")?;
        let updated_at = self
            .insert(org, name, version, &body_json, false, updated_by)
            .await?;
        Ok(PolicyVersion {
            name: name.clone(),
            version,
            body: body.clone(),
            updated_by: updated_by.to_owned(),
            updated_at,
        })
    }

    async fn get(
        &self,
        org: &OrgId,
        name: &PolicyName,
        version: Option<i64>,
    ) -> Result<Option<PolicyVersion>, PolicyStoreError> {
        let version = match version {
            Some(version) => version,
            None => match self.latest(org, name).await? {
                Some(latest) if !latest.deleted => latest.version,
                _ => return Ok(None),
            },
        };
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM policy_versions \
             WHERE org_id = $1 AND name = $2 AND version = $3 AND deleted = 0"
        ))
        .bind(&org.0)
        .bind(name.as_str())
        .bind(version)
        .fetch_optional(&self.pool)
        .await
        .context("failed to read a policy version")?;
        Ok(row.as_ref().map(decode).transpose()?)
    }

    async fn current(&self, org: &OrgId) -> Result<Vec<PolicyVersion>, PolicyStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM policy_versions p \
             WHERE p.org_id = $1 AND p.deleted = 0 AND p.version = \
             (SELECT MAX(q.version) FROM policy_versions q \
              WHERE q.org_id = p.org_id AND q.name = p.name) \
             ORDER BY p.name"
        ))
        .bind(&org.0)
        .fetch_all(&self.pool)
        .await
        .context("failed to read the organization's policies")?;
        decode_all(&rows)
    }

    async fn versions(
        &self,
        org: &OrgId,
        name: &PolicyName,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<PolicyVersion>, PolicyStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM policy_versions \
             WHERE org_id = $1 AND name = $2 AND version < $3 AND deleted = 0 \
             ORDER BY version DESC LIMIT $4"
        ))
        .bind(&org.0)
        .bind(name.as_str())
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .context("failed to read a policy's versions")?;
        decode_all(&rows)
    }

    async fn delete(
        &self,
        org: &OrgId,
        name: &PolicyName,
        expected_version: i64,
        deleted_by: &str,
    ) -> Result<(), PolicyStoreError> {
        let latest = match self.latest(org, name).await? {
            Some(latest) if !latest.deleted => latest,
            _ => return Err(PolicyStoreError::NotFound),
        };
        if expected_version != 0 && expected_version != latest.version {
            return Err(PolicyStoreError::Stale {
                name: name.to_string(),
                expected: expected_version,
                current: latest.version,
            });
        }
        self.insert(
            org,
            name,
            latest.version + 1,
            &latest.body_json,
            true,
            deleted_by,
        )
        .await?;
        Ok(())
    }
}
