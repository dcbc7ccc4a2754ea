//! [`DataSources`] with none: a thread without data sources, whose imports
//! are refused and whose queries fail as the engine's do on a thread
//! without tables (`tests/it/data_sources_suite.rs` holds it to that).

use async_trait::async_trait;

use crate::domain::{
    datasource::{DataSource, DataSources, ImportError, QueryError, QueryResult},
    ids::{IntegrationId, ThreadId},
};

/// No data sources.
#[derive(Debug, Default)]
pub struct NoSources;

#[async_trait]
impl DataSources for NoSources {
    async fn import_csv(
        &self,
        _thread_id: ThreadId,
        _name: &str,
        _origin: &str,
        _integration_id: Option<IntegrationId>,
        _csv: bytes::Bytes,
    ) -> Result<DataSource, ImportError> {
        Err(ImportError::Storage(anyhow::anyhow!(
            "these tests import no data sources"
        )))
    }

    async fn list(&self, _thread_id: ThreadId) -> Result<Vec<DataSource>, anyhow::Error> {
        Ok(Vec::new())
    }

    async fn query(&self, _thread_id: ThreadId, _sql: &str) -> Result<QueryResult, QueryError> {
        // The engine's words for a table the thread does not have: every
        // table is one, since the thread has none.
        Err(QueryError::Engine(
            "Error during planning: the thread has no tables; a table named in the query was not found"
                .to_owned(),
        ))
    }
}
