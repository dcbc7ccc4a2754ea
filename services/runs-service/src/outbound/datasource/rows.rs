//! The rows of `data_sources`: writing and deleting an imported table's
//! row, reading the tables a query names, and where a table's bytes are
//! kept (the row, or an object in the store).

use std::collections::HashSet;

use anyhow::Context as _;
use bytes::Bytes;
use sqlx::{AnyPool, Row, any::AnyRow};

use super::{SqlDataSources, cache::TableCache, import};
use crate::domain::{
    datasource::{Column, DataSource},
    ids::{DataSourceId, ThreadId},
};
use crate::outbound::sql::{stored_id, stored_optional_id};

/// Tries at a unique table name when concurrent imports pick the same one.
pub(super) const NAME_ATTEMPTS: usize = 8;

pub(super) const METADATA_COLUMNS: &str = "id, thread_id, table_name, origin, integration_id, \
     columns_json, row_count, size_bytes, created_at";

/// A table as stored: its Parquet bytes, or the key and size of the object
/// that holds them.
#[derive(Debug, Clone)]
pub(super) enum Stored {
    Bytes(Bytes),
    Object { key: String, bytes: u64 },
}

/// Stored tables and the cache of decoded ones.
#[derive(Debug)]
pub(super) struct Store {
    pub(super) pool: AnyPool,
    pub(super) cache: TableCache,
}

impl Store {
    /// The stored bytes of data source `id`, from the cache or the database.
    pub(super) async fn load(&self, id: DataSourceId) -> anyhow::Result<Bytes> {
        if let Some(content) = self.cache.get(id) {
            return Ok(content);
        }
        let content: Vec<u8> = sqlx::query("SELECT content FROM data_sources WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .context("failed to read a data source")?
            .context("the data source was deleted")?
            .try_get("content")
            .context("failed to read a data source")?;
        let content = Bytes::from(content);
        self.cache.insert(id, content.clone());
        Ok(content)
    }

    /// Writes the row of `source`, named after `name` and unique in its
    /// thread: the table name it was given.
    pub(super) async fn insert(
        &self,
        source: &DataSource,
        name: &str,
        content: &Stored,
    ) -> anyhow::Result<String> {
        let (bytes, object_key, object_bytes): (&[u8], Option<&str>, Option<i64>) = match content {
            Stored::Bytes(bytes) => (bytes.as_ref(), None, None),
            Stored::Object { key, bytes } => (
                &[],
                Some(key.as_str()),
                Some(i64::try_from(*bytes).unwrap_or(i64::MAX)),
            ),
        };
        let columns_json =
            serde_json::to_string(&source.columns).context("failed to encode columns")?;
        for _ in 0..NAME_ATTEMPTS {
            let taken: HashSet<String> =
                sqlx::query("SELECT table_name FROM data_sources WHERE thread_id = $1")
                    .bind(source.thread_id.to_string())
                    .fetch_all(&self.pool)
                    .await
                    .context("failed to read the thread's table names")?
                    .iter()
                    .map(|row| row.try_get("table_name"))
                    .collect::<Result<_, _>>()?;
            let table_name = import::table_name(name, &taken);
            let inserted = sqlx::query(
                "INSERT INTO data_sources (id, thread_id, table_name, origin, integration_id, \
                 columns_json, row_count, size_bytes, content, created_at, object_key, \
                 object_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(source.id.to_string())
            .bind(source.thread_id.to_string())
            .bind(table_name.as_str())
            .bind(source.origin.as_str())
            .bind(source.integration_id.map(String::from))
            .bind(columns_json.as_str())
            .bind(source.row_count)
            .bind(source.size_bytes)
            .bind(bytes)
            .bind(source.created_at)
            .bind(object_key)
            .bind(object_bytes)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(_) => return Ok(table_name),
                // Another import took the name in between: pick again.
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {}
                Err(error) => {
                    return Err(anyhow::Error::new(error).context("failed to insert a data source"));
                }
            }
        }
        anyhow::bail!("no unique table name found after {NAME_ATTEMPTS} tries")
    }

    /// Deletes the row of data source `id`, if it was written.
    pub(super) async fn delete_row(&self, id: DataSourceId) -> anyhow::Result<()> {
        sqlx::query("DELETE FROM data_sources WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await
            .context("failed to delete a data source")?;
        Ok(())
    }
}

pub(super) fn decode_source(row: &AnyRow) -> anyhow::Result<DataSource> {
    let columns_json: String = row.try_get("columns_json")?;
    let columns: Vec<Column> =
        serde_json::from_str(&columns_json).context("stored columns are not valid")?;
    Ok(DataSource {
        id: stored_id(row, "id")?,
        thread_id: stored_id(row, "thread_id")?,
        table_name: row.try_get("table_name")?,
        origin: row.try_get("origin")?,
        integration_id: stored_optional_id(row, "integration_id")?,
        columns,
        row_count: row.try_get("row_count")?,
        size_bytes: row.try_get("size_bytes")?,
        created_at: row.try_get("created_at")?,
    })
}

impl SqlDataSources {
    /// The thread's tables whose names `named` holds (lowercase): the only
    /// ones the query can read; their bytes, or their objects.
    pub(super) async fn named_tables(
        &self,
        thread_id: ThreadId,
        named: &HashSet<String>,
    ) -> anyhow::Result<Vec<(String, Stored)>> {
        let rows = sqlx::query(
            "SELECT id, table_name, object_key, object_bytes FROM data_sources \
             WHERE thread_id = $1",
        )
        .bind(thread_id.to_string())
        .fetch_all(&self.store.pool)
        .await
        .context("failed to read the thread's data sources")?;
        let mut tables = Vec::new();
        for row in &rows {
            let name: String = row.try_get("table_name")?;
            if !named.contains(&name.to_lowercase()) {
                continue;
            }
            let key: Option<String> = row.try_get("object_key")?;
            let stored = match key {
                Some(key) => {
                    let bytes: Option<i64> = row.try_get("object_bytes")?;
                    Stored::Object {
                        key,
                        bytes: bytes.and_then(|b| u64::try_from(b).ok()).unwrap_or(0),
                    }
                }
                None => Stored::Bytes(self.store.load(stored_id(row, "id")?).await?),
            };
            tables.push((name, stored));
        }
        Ok(tables)
    }
}
