//! The stored form of a table: Parquet bytes.
//!
//! Parquet's dictionary and run-length encodings plus zstd keep typical CSV
//! data several times smaller than the CSV (and than Arrow IPC), which matters
//! because every replica reads the whole table from the database, while
//! decoding stays fast (see BENCHMARKS-data-sources.md).

use anyhow::Context as _;
use bytes::Bytes;
use std::sync::Arc;

use datafusion::arrow::{datatypes::SchemaRef, record_batch::RecordBatch};
use parquet::{
    arrow::arrow_reader::ParquetRecordBatchReaderBuilder,
    basic::{Compression, ZstdLevel},
    file::properties::WriterProperties,
};

/// Rows per decoded batch, DataFusion's default batch size.
pub(super) const BATCH_ROWS: usize = 8192;

/// Rows of one row group: the unit a scan of a table in a store decodes
/// at a time, so what bounds a streaming query's memory per partition
/// (128 Ki rows of a few dozen columns are tens of MiB decoded).
pub(super) const ROW_GROUP_ROWS: usize = 128 * 1024;

/// How tables are written for storage.
pub(super) fn properties() -> anyhow::Result<WriterProperties> {
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .build())
}

/// Encodes `batch` for storage, all at once.
#[cfg(test)]
pub(super) fn encode(batch: &RecordBatch) -> anyhow::Result<Vec<u8>> {
    let properties = properties()?;
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(Vec::new(), batch.schema(), Some(properties))
            .context("failed to start encoding a table")?;
    writer.write(batch).context("failed to encode a table")?;
    writer
        .into_inner()
        .context("failed to finish encoding a table")
}

/// A decoded table, ready to be scanned.
#[derive(Debug)]
pub(super) struct LoadedTable {
    pub schema: SchemaRef,
    /// Its rows, spread over partitions that are scanned in parallel.
    pub partitions: Vec<Vec<RecordBatch>>,
    /// The memory its arrays take.
    pub bytes: usize,
}

/// Decodes stored bytes into a table of `partitions` partitions.
pub(super) fn load(content: Bytes, partitions: usize) -> anyhow::Result<LoadedTable> {
    let (schema, batches) = decode(content)?;
    let bytes = batches.iter().map(RecordBatch::get_array_memory_size).sum();
    let mut spread = vec![Vec::new(); partitions.max(1)];
    let count = spread.len();
    for (i, batch) in batches.into_iter().enumerate() {
        spread[i % count].push(batch);
    }
    Ok(LoadedTable {
        schema,
        partitions: spread,
        bytes,
    })
}

/// Decodes stored bytes into their schema and batches of [`BATCH_ROWS`]
/// rows. The schema comes from the file's metadata, so a table without rows
/// (no batches) keeps its columns.
pub(super) fn decode(content: Bytes) -> anyhow::Result<(SchemaRef, Vec<RecordBatch>)> {
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(content).context("stored table is not valid")?;
    let schema = Arc::clone(builder.schema());
    let reader = builder
        .with_batch_size(BATCH_ROWS)
        .build()
        .context("failed to read a stored table")?;
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .context("failed to decode a stored table")?;
    Ok((schema, batches))
}
