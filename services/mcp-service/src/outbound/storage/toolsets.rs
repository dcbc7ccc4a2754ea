//! Toolsets in SQL (SQLite or PostgreSQL through `sqlx::Any`), one row each,
//! the members as JSON.

use anyhow::Context as _;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, Row, any::AnyRow};

use crate::domain::{
    integration::{IntegrationId, OrgId},
    toolset::{
        model::{Member, ToolOverride, Toolset, ToolsetBody, ToolsetName},
        ports::{ToolsetRepository, ToolsetStoreError},
    },
};

/// [`ToolsetRepository`] over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlToolsetRepository {
    pool: AnyPool,
}

impl SqlToolsetRepository {
    /// A repository over `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }
}

const COLUMNS: &str =
    "name, description, members_json, created_by, created_at, updated_by, updated_at";

/// A member as stored: the id as text, absent selections omitted.
#[derive(Serialize, Deserialize)]
struct StoredMember {
    integration_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    overrides: Vec<StoredOverride>,
}

/// An override as stored, unset fields omitted.
#[derive(Serialize, Deserialize)]
struct StoredOverride {
    tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    hidden: bool,
}

impl From<&ToolOverride> for StoredOverride {
    fn from(o: &ToolOverride) -> Self {
        Self {
            tool: o.tool.clone(),
            name: o.name.clone(),
            description: o.description.clone(),
            hidden: o.hidden,
        }
    }
}

impl From<StoredOverride> for ToolOverride {
    fn from(o: StoredOverride) -> Self {
        Self {
            tool: o.tool,
            name: o.name,
            description: o.description,
            hidden: o.hidden,
        }
    }
}

fn members_json(members: &[Member]) -> anyhow::Result<String> {
    let stored: Vec<StoredMember> = members
        .iter()
        .map(|m| StoredMember {
            integration_id: m.integration_id.to_string(),
            tools: m.tools.clone(),
            resources: m.resources.clone(),
            overrides: m.overrides.iter().map(StoredOverride::from).collect(),
        })
        .collect();
    serde_json::to_string(&stored).context("failed to encode a toolset's members")
}

fn decode(row: &AnyRow) -> anyhow::Result<Toolset> {
    let name: String = row.try_get("name")?;
    let stored: Vec<StoredMember> =
        serde_json::from_str(&row.try_get::<String, _>("members_json")?)
            .context("stored toolset members are not valid")?;
    let members = stored
        .into_iter()
        .map(|m| {
            Ok(Member {
                integration_id: IntegrationId::parse("integration_id", &m.integration_id)
                    .map_err(|v| anyhow::anyhow!(v.description))?,
                tools: m.tools,
                resources: m.resources,
                overrides: m.overrides.into_iter().map(ToolOverride::from).collect(),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Toolset {
        name: ToolsetName::parse(&name).context("stored toolset name is not valid")?,
        body: ToolsetBody {
            description: row.try_get("description")?,
            members,
        },
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
        updated_by: row.try_get("updated_by")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn failed(error: sqlx::Error, what: &'static str) -> ToolsetStoreError {
    ToolsetStoreError::Other(anyhow::Error::new(error).context(what))
}

#[async_trait]
impl ToolsetRepository for SqlToolsetRepository {
    async fn insert(&self, org: &OrgId, toolset: &Toolset) -> Result<(), ToolsetStoreError> {
        let inserted = sqlx::query(&format!(
            "INSERT INTO toolsets (org_id, {COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&org.0)
        .bind(toolset.name.as_str())
        .bind(&toolset.body.description)
        .bind(members_json(&toolset.body.members)?)
        .bind(&toolset.created_by)
        .bind(toolset.created_at)
        .bind(&toolset.updated_by)
        .bind(toolset.updated_at)
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                Err(ToolsetStoreError::Exists(toolset.name.to_string()))
            }
            Err(error) => Err(failed(error, "failed to write a toolset")),
        }
    }

    async fn get(
        &self,
        org: &OrgId,
        name: &ToolsetName,
    ) -> Result<Option<Toolset>, ToolsetStoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM toolsets WHERE org_id = $1 AND name = $2"
        ))
        .bind(&org.0)
        .bind(name.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| failed(e, "failed to read a toolset"))?;
        Ok(row.as_ref().map(decode).transpose()?)
    }

    async fn list(
        &self,
        org: &OrgId,
        after: Option<&ToolsetName>,
        limit: usize,
    ) -> Result<Vec<Toolset>, ToolsetStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM toolsets WHERE org_id = $1 AND name > $2 \
             ORDER BY name LIMIT $3"
        ))
        .bind(&org.0)
        .bind(after.map_or("", ToolsetName::as_str))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed(e, "failed to read the organization's toolsets"))?;
        Ok(rows.iter().map(decode).collect::<anyhow::Result<_>>()?)
    }

    async fn count(&self, org: &OrgId) -> Result<usize, ToolsetStoreError> {
        let count: i64 = sqlx::query("SELECT COUNT(*) AS n FROM toolsets WHERE org_id = $1")
            .bind(&org.0)
            .fetch_one(&self.pool)
            .await
            .and_then(|row| row.try_get("n"))
            .map_err(|e| failed(e, "failed to count the organization's toolsets"))?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    async fn update(&self, org: &OrgId, toolset: &Toolset) -> Result<bool, ToolsetStoreError> {
        let result = sqlx::query(
            "UPDATE toolsets SET description = $3, members_json = $4, updated_by = $5, \
             updated_at = $6 WHERE org_id = $1 AND name = $2",
        )
        .bind(&org.0)
        .bind(toolset.name.as_str())
        .bind(&toolset.body.description)
        .bind(members_json(&toolset.body.members)?)
        .bind(&toolset.updated_by)
        .bind(toolset.updated_at)
        .execute(&self.pool)
        .await
        .map_err(|e| failed(e, "failed to write a toolset"))?;
        Ok(result.rows_affected() > 0)
    }

    async fn delete(&self, org: &OrgId, name: &ToolsetName) -> Result<bool, ToolsetStoreError> {
        let result = sqlx::query("DELETE FROM toolsets WHERE org_id = $1 AND name = $2")
            .bind(&org.0)
            .bind(name.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| failed(e, "failed to delete a toolset"))?;
        Ok(result.rows_affected() > 0)
    }
}
