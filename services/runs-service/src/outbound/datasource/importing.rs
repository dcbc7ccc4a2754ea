//! An import from its admission to its row: refused before any work when
//! it is too large, over its organization's quota or finds no slot; parsed
//! and encoded in its organization's turns, its parts handed to the store
//! as they come; then stored and recorded to its end (see `storing.rs`).

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use tokio::time::Instant;

use super::{
    SqlDataSources, Stored, Storing,
    import_work::{Encoded, ImportWork, Produced},
    pool::{CpuPool, PoolError, Turn},
    slots::Slot,
};
use crate::domain::{
    datasource::{Busy, DataSource, ImportError},
    ids::{DataSourceId, IntegrationId, ThreadId},
};

impl SqlDataSources {
    /// Imports `csv` as a table of `thread_id` named after `name`.
    pub(super) async fn import(
        &self,
        thread_id: ThreadId,
        name: &str,
        origin: &str,
        integration_id: Option<IntegrationId>,
        csv: Bytes,
    ) -> Result<DataSource, ImportError> {
        let (org, deadline, slot) = self.admit(thread_id, csv.len()).await?;
        let id = DataSourceId::new();
        let csv_bytes = csv.len();
        let (encoded, storing) = self
            .encode(&org, deadline, slot, (thread_id, id), csv)
            .await?;
        let row_count = encoded.rows;
        let mut source = DataSource {
            id,
            thread_id,
            table_name: String::new(),
            origin: origin.to_owned(),
            integration_id,
            columns: encoded.columns,
            row_count: i64::try_from(row_count).unwrap_or(i64::MAX),
            size_bytes: i64::try_from(csv_bytes).unwrap_or(i64::MAX),
            created_at: switchboard_db::now_millis(),
        };
        // The slot is held until the row is written.
        let _slot = encoded.slot;
        let (table_name, stored) = storing
            .finish_and_record(
                encoded.content,
                Arc::clone(&self.store),
                source.clone(),
                name.to_owned(),
            )
            .await?;
        source.table_name = table_name;
        let stored_bytes = match &stored {
            Stored::Bytes(bytes) => bytes.len() as u64,
            Stored::Object { bytes, .. } => *bytes,
        };

        // The model usually queries a table right after importing it; one
        // in a store is read from there by the query's worker.
        if let Stored::Bytes(content) = stored {
            self.store.cache.insert(source.id, content);
        }
        tracing::info!(
            %thread_id,
            table = %source.table_name,
            rows = row_count,
            csv_bytes,
            stored_bytes,
            "data source imported"
        );
        Ok(source)
    }

    /// Admits an import of `csv_bytes` into `thread_id`: its organization,
    /// its deadline and its slot, or why it is refused before any work.
    async fn admit(
        &self,
        thread_id: ThreadId,
        csv_bytes: usize,
    ) -> Result<(String, Instant, Slot), ImportError> {
        if csv_bytes > self.import.max_bytes {
            return Err(ImportError::TooLarge {
                limit: self.import.max_bytes,
                actual: csv_bytes,
            });
        }
        let org = self
            .org_of(thread_id)
            .await
            .map_err(ImportError::Storage)?
            .ok_or_else(|| ImportError::Storage(anyhow::anyhow!("the thread does not exist")))?;
        // Parsing and encoding take memory and CPU like a query.
        let deadline = Instant::now() + self.limits.timeout;
        let slot = self
            .slots
            .acquire(&org, self.limits.timeout)
            .await
            .map_err(ImportError::Busy)?;
        self.check_org_quota(&org, csv_bytes).await?;
        Ok((org, deadline, slot))
    }

    /// Parses and encodes `csv` in `org`'s turns, holding `slot`, handing
    /// the table's parts to its storing for data source `id` of
    /// `thread_id` as they come: the encoded table (its last bytes not yet
    /// handed on) and its storing, to finish once its row is ready.
    async fn encode(
        &self,
        org: &str,
        deadline: Instant,
        slot: Slot,
        (thread_id, id): (ThreadId, DataSourceId),
        csv: Bytes,
    ) -> Result<(Encoded, Storing), ImportError> {
        let mut storing = self.storing(thread_id, id);
        let part_bytes = storing.part_bytes();
        let work = ImportWork::new(csv, self.import, self.piece_bytes, part_bytes, slot);
        let waits = (deadline, self.limits.timeout);
        match parse_and_encode(&self.pool, org, waits, work, &mut storing).await {
            Ok(encoded) => Ok((encoded, storing)),
            Err(error) => {
                storing.abort().await;
                Err(error)
            }
        }
    }
}

/// Parses and encodes a CSV in `org`'s turns of `pool`, a piece a turn,
/// off the async workers: both are CPU work. Each part of the table is
/// handed to `storing` as it is ready, while the work waits for its next
/// turn; the rest comes with the table. The work holds `slot` until it
/// ends, and gives it back with the table. It waits for its first turn until
/// `deadline`, and for each turn after a part at most `turn_wait`.
async fn parse_and_encode(
    pool: &CpuPool,
    org: &str,
    (deadline, turn_wait): (Instant, Duration),
    work: ImportWork,
    storing: &mut Storing,
) -> Result<Encoded, ImportError> {
    let (mut work, mut deadline) = (Some(work), deadline);
    loop {
        let mut held = work.take();
        // The work comes back with a part, to go on after it.
        let (produced, back) = pool
            .run_in_pieces(org, deadline, move || {
                match held.as_mut().map(ImportWork::piece) {
                    Some(Turn::More) => Turn::More,
                    Some(Turn::Done(produced)) => Turn::Done(produced.map(|p| (p, held.take()))),
                    None => Turn::Done(Err(over())),
                }
            })
            .await
            .map_err(|error| match error {
                PoolError::Waited(wait) => ImportError::Busy(Busy::Timeout(wait)),
                PoolError::Stopped => ImportError::Storage(anyhow::anyhow!("the import stopped")),
            })??;
        match produced {
            Produced::Table(encoded) => return Ok(encoded),
            Produced::Part(part) => {
                storing.put(part).await.map_err(ImportError::Storage)?;
                (work, deadline) = (back, Instant::now() + turn_wait);
            }
        }
    }
}

fn over() -> ImportError {
    ImportError::Storage(anyhow::anyhow!("the import was over"))
}
