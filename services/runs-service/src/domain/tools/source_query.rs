//! `source_query`: read-only SQL over the thread's data sources.

use std::sync::Arc;

use super::{ToolArguments, outcome::ToolOutcome};
use crate::domain::{
    datasource::{DataSources, QueryError},
    ids::ThreadId,
    texts,
};

/// The `source_query` tool.
#[derive(Clone)]
pub struct SourceQuery {
    sources: Arc<dyn DataSources>,
}

impl std::fmt::Debug for SourceQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceQuery").finish_non_exhaustive()
    }
}

impl SourceQuery {
    /// The tool over `sources`.
    pub fn new(sources: Arc<dyn DataSources>) -> Self {
        Self { sources }
    }

    /// Runs the query of `arguments` over `thread_id`'s data sources.
    pub async fn run(&self, thread_id: ThreadId, arguments: &ToolArguments) -> ToolOutcome {
        let Some(sql) = arguments.text_arg("query") else {
            return ToolOutcome::failed(texts::query_failed(texts::QUERY_REQUIRED));
        };
        let result = self.sources.query(thread_id, sql).await;
        crate::metrics::datasource_query(match &result {
            Ok(_) => "ok",
            Err(QueryError::Refused(_)) => "refused",
            Err(QueryError::Engine(_) | QueryError::OutOfMemory { .. }) => "failed",
            Err(QueryError::Timeout(_)) => "timeout",
            Err(QueryError::Internal(_)) => "error",
        });
        match result {
            Ok(result) => ToolOutcome::succeeded(texts::query_table(&result)),
            Err(QueryError::Engine(message)) => ToolOutcome::failed(texts::query_failed(message)),
            Err(QueryError::OutOfMemory { limit_bytes }) => {
                ToolOutcome::failed(texts::query_failed(texts::query_out_of_memory(limit_bytes)))
            }
            Err(QueryError::Refused(refusal)) => {
                ToolOutcome::failed(texts::query_refused(texts::query_refusal(&refusal)))
            }
            Err(QueryError::Timeout(limit)) => ToolOutcome::failed(texts::query_timed_out(limit)),
            Err(QueryError::Internal(error)) => {
                tracing::error!(error = ?error, "data source query failed");
                ToolOutcome::failed(texts::query_internal_error())
            }
        }
    }
}
