//! A tool result longer than the context should take: a table (a JSON array
//! of objects, newline-delimited JSON, CSV) is stored as a data source of
//! the thread, the path a CSV resource takes, and the model reads its
//! schema and first rows; any other text, or a table the import refuses, is
//! cut, with a note saying where and why.

use super::outcome::{ToolContext, ToolOutcome};
use crate::domain::{
    datasource::{DataSources, ImportLimits, QueryLimits},
    ids::IntegrationId,
    oversized::{self, Cut, Shape, Tabular},
    texts,
};
use bytes::Bytes;

/// The default of [`LargeResults::limit`]: 64 KiB (about 16,000 tokens),
/// the most a `source_query` result renders, so that no single tool result
/// takes more of the context than a query's.
pub const DEFAULT_TABLE_BYTES: usize = 64 * 1024;

/// Rows of a stored result the model reads beside its schema.
const FIRST_ROWS: usize = 5;

/// Where a run's large tool results go.
#[derive(Clone, Copy)]
pub(super) struct LargeResults<'a> {
    /// The thread's data sources, which a tabular result joins.
    pub(super) sources: &'a dyn DataSources,
    /// Results longer than this many bytes are stored or cut.
    pub(super) limit: usize,
}

/// One large result: what the tool that returned it is and where it ran.
pub(super) struct LargeResult<'a> {
    pub(super) context: &'a ToolContext,
    pub(super) integration_id: IntegrationId,
    pub(super) tool: &'a str,
}

impl LargeResults<'_> {
    /// Whether a result of `bytes` is too long to hand over as it is.
    pub(super) fn too_long(&self, bytes: usize) -> bool {
        bytes > self.limit
    }

    /// `text`, longer than the limit, as the model reads it: a table's
    /// description, or its first part and a note.
    pub(super) async fn deliver(&self, result: &LargeResult<'_>, text: String) -> ToolOutcome {
        let (integration_id, tool) = (result.integration_id, result.tool);
        let bytes = text.len();
        // Kept before the text is handed on, for when it cannot be a table.
        let cut = Cut::of(&text, self.limit);
        let reason = match oversized::tabulate(text, ImportLimits::default().max_columns) {
            Tabular::Table { shape, csv } => match self.store(result, shape, bytes, &csv).await {
                Ok(outcome) => return outcome,
                Err(reason) => Some(reason),
            },
            Tabular::NotTabular => None,
            Tabular::Unusable(why) => Some(texts::not_a_table(&why)),
        };
        tracing::info!(
            %integration_id,
            tool,
            bytes,
            limit = self.limit,
            reason = reason.as_deref().unwrap_or("not tabular"),
            "a large tool result was cut"
        );
        ToolOutcome::succeeded(texts::result_cut(&cut, self.limit, reason.as_deref()))
    }

    /// Imports `csv` into the thread as a table named after the tool; why
    /// not, in words, when the import refuses it.
    async fn store(
        &self,
        result: &LargeResult<'_>,
        shape: Shape,
        bytes: usize,
        csv: &[u8],
    ) -> Result<ToolOutcome, String> {
        let (integration_id, tool) = (result.integration_id, result.tool);
        let first_rows =
            oversized::first_rows(csv, FIRST_ROWS, QueryLimits::default().max_cell_chars);
        let origin = format!("tool:{tool}");
        let source = self
            .sources
            .import_csv(
                result.context.thread_id,
                tool,
                &origin,
                Some(integration_id),
                Bytes::copy_from_slice(csv),
            )
            .await
            .map_err(|error| texts::import_failed(&error))?;
        tracing::info!(
            %integration_id,
            tool,
            bytes,
            table = %source.table_name,
            rows = source.row_count,
            "a large tool result was stored as a data source"
        );
        Ok(ToolOutcome::succeeded(texts::result_table(
            tool,
            shape,
            bytes,
            &source,
            &first_rows,
        ))
        .changing_sources())
    }
}
