//! Encoding a table for storage a piece at a time: the same Parquet bytes
//! as [`codec::encode`](super::codec::encode) writes at once.
//!
//! The Parquet writer cuts a column's pages after each run of values it is
//! given at a time (1,024 values, or 20,000 when a column's values are all
//! present or all NULL, from the start of each call), so each column is
//! given to it in slices of exactly that length, one column after another;
//! the column chunks are joined into row groups as the writer would.
//!
//! The table may come in several batches, each a whole number of row groups
//! but the last, so that an import holds one row group at a time; the bytes
//! of the row groups written so far can be taken before the file ends.

use anyhow::Context as _;
use datafusion::arrow::{array::Array, datatypes::SchemaRef, record_batch::RecordBatch};
use parquet::{
    arrow::{
        ArrowWriter,
        arrow_writer::{
            ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
        },
    },
    file::{properties::WriterProperties, writer::SerializedFileWriter},
};

use super::codec;

/// A table being encoded, column after column in slices.
pub(super) struct TableEncoder {
    /// The rows being encoded (the last batch given).
    batch: RecordBatch,
    file: SerializedFileWriter<Vec<u8>>,
    factory: ArrowRowGroupWriterFactory,
    /// Rows per row group.
    group_rows: usize,
    /// Values given to the writer at a time, when a column's values are
    /// all present or all NULL, and otherwise.
    uniform_run: usize,
    mixed_run: usize,
    /// The row group being written: its first row in `batch`, its columns'
    /// writers (those not yet finished) and finished chunks.
    group_start: usize,
    writers: std::vec::IntoIter<ArrowColumnWriter>,
    writing: Option<ArrowColumnWriter>,
    chunks: Vec<ArrowColumnChunk>,
    /// The column and row encoded next.
    column: usize,
    row: usize,
    /// Bytes of the file taken so far.
    taken: usize,
}

impl std::fmt::Debug for TableEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableEncoder")
            .field("batch_rows", &self.batch.num_rows())
            .field("column", &self.column)
            .field("row", &self.row)
            .finish_non_exhaustive()
    }
}

impl TableEncoder {
    /// Starts encoding a table of `schema`, without rows until
    /// [`Self::push`] gives some.
    pub(super) fn new(schema: SchemaRef) -> anyhow::Result<Self> {
        Self::with_properties(schema, codec::properties()?)
    }

    /// Starts encoding a table of `schema` with `properties`.
    fn with_properties(schema: SchemaRef, properties: WriterProperties) -> anyhow::Result<Self> {
        let group_rows = properties
            .max_row_group_row_count()
            .unwrap_or(usize::MAX)
            .max(1);
        let (uniform_run, mixed_run) = (
            properties.data_page_row_count_limit().max(1),
            properties.write_batch_size().max(1),
        );
        let batch = RecordBatch::new_empty(SchemaRef::clone(&schema));
        let writer = ArrowWriter::try_new(Vec::new(), schema, Some(properties))
            .context("failed to start encoding a table")?;
        let (file, factory) = writer
            .into_serialized_writer()
            .context("failed to start encoding a table")?;
        Ok(Self {
            batch,
            file,
            factory,
            group_rows,
            uniform_run,
            mixed_run,
            group_start: 0,
            writers: Vec::new().into_iter(),
            writing: None,
            chunks: Vec::new(),
            column: 0,
            row: 0,
            taken: 0,
        })
    }

    /// Gives the encoder the next rows of the table, once the rows given
    /// before are encoded. Every batch but the last must hold a whole number
    /// of row groups, for the groups to be cut where a writer given the
    /// whole table at once cuts them.
    pub(super) fn push(&mut self, batch: RecordBatch) {
        debug_assert!(self.group_start >= self.batch.num_rows());
        self.batch = batch;
        (self.group_start, self.column, self.row) = (0, 0, 0);
    }

    /// Encodes about `cells` more values (at least one slice); whether the
    /// rows given are all encoded.
    pub(super) fn encode_piece(&mut self, cells: usize) -> anyhow::Result<bool> {
        let mut budget = cells.max(1);
        while budget > 0 {
            if self.group_start >= self.batch.num_rows() {
                return Ok(true);
            }
            let group_len = self
                .group_rows
                .min(self.batch.num_rows() - self.group_start);
            if self.column == 0 && self.row == 0 && self.writing.is_none() {
                self.start_group()?;
            }
            if self.column >= self.batch.num_columns() {
                self.finish_group()?;
                continue;
            }
            budget = budget.saturating_sub(self.write_slice(group_len)?);
        }
        Ok(self.group_start >= self.batch.num_rows())
    }

    /// Writes the next slice of the current column of the row group
    /// `group_len` rows long; the values written.
    fn write_slice(&mut self, group_len: usize) -> anyhow::Result<usize> {
        let field = self.batch.schema().field(self.column).clone();
        let whole = self
            .batch
            .column(self.column)
            .slice(self.group_start, group_len);
        let all_or_none = whole
            .logical_nulls()
            .is_none_or(|nulls| nulls.null_count() == nulls.len());
        let run = if all_or_none {
            self.uniform_run
        } else {
            self.mixed_run
        };
        let take = run.min(group_len - self.row);
        let writer = match &mut self.writing {
            Some(writer) => writer,
            slot => slot.insert(self.writers.next().context("a column without a writer")?),
        };
        for leaf in compute_leaves(&field, &whole.slice(self.row, take))? {
            writer.write(&leaf).context("failed to encode a table")?;
        }
        self.row += take;
        if self.row >= group_len {
            if let Some(writer) = self.writing.take() {
                self.chunks
                    .push(writer.close().context("failed to encode a table")?);
            }
            (self.column, self.row) = (self.column + 1, 0);
        }
        Ok(take)
    }

    fn start_group(&mut self) -> anyhow::Result<()> {
        let index = self.file.flushed_row_groups().len();
        self.writers = self
            .factory
            .create_column_writers(index)
            .context("failed to start a row group")?
            .into_iter();
        Ok(())
    }

    fn finish_group(&mut self) -> anyhow::Result<()> {
        let mut group = self
            .file
            .next_row_group()
            .context("failed to write a row group")?;
        for chunk in self.chunks.drain(..) {
            chunk
                .append_to_row_group(&mut group)
                .context("failed to write a row group")?;
        }
        group.close().context("failed to write a row group")?;
        self.group_start = self.group_start.saturating_add(self.group_rows);
        (self.column, self.row) = (0, 0);
        Ok(())
    }

    /// Bytes of the file written and not yet taken.
    pub(super) fn written(&self) -> usize {
        self.file.bytes_written() - self.taken
    }

    /// The bytes of the file written since they were last taken: the row
    /// groups finished since then.
    pub(super) fn take_written(&mut self) -> anyhow::Result<Vec<u8>> {
        self.file.flush().context("failed to encode a table")?;
        // The writer counts the bytes it wrote itself, so taking them from
        // its buffer leaves the offsets in the footer right.
        let bytes = std::mem::take(self.file.inner_mut());
        self.taken += bytes.len();
        Ok(bytes)
    }

    /// The file's bytes not yet taken, with its footer, once every row is
    /// encoded.
    pub(super) fn finish(self) -> anyhow::Result<Vec<u8>> {
        self.file
            .into_inner()
            .context("failed to finish encoding a table")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::{
        array::{ArrayRef, Int64Array, StringArray},
        datatypes::{DataType, Field, Schema},
    };

    use super::*;

    /// `rows` rows: integers without NULLs, integers with some, text with
    /// some (long enough to fill pages by bytes), a column of NULLs only.
    fn table(rows: usize) -> RecordBatch {
        let n = i64::try_from(rows).unwrap_or(i64::MAX);
        let plain: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let holes: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 7 != 3).then_some(i * 31 % 1000)),
        ));
        let text: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| {
            (i % 11 != 5).then(|| {
                format!(
                    "value {i} {}",
                    "x".repeat(usize::try_from(i % 90).unwrap_or(0))
                )
            })
        })));
        let none: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; rows]));
        let fields = vec![
            Field::new("plain", DataType::Int64, true),
            Field::new("holes", DataType::Int64, true),
            Field::new("text", DataType::Utf8, true),
            Field::new("none", DataType::Utf8, true),
        ];
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            vec![plain, holes, text, none],
        )
        .expect("a table")
    }

    fn at_once(batch: &RecordBatch, properties: WriterProperties) -> Vec<u8> {
        let mut writer =
            ArrowWriter::try_new(Vec::new(), batch.schema(), Some(properties)).expect("starts");
        writer.write(batch).expect("writes");
        writer.into_inner().expect("ends")
    }

    fn in_pieces(
        batch: &RecordBatch,
        properties: WriterProperties,
        cells: usize,
    ) -> (Vec<u8>, usize) {
        let mut encoder =
            TableEncoder::with_properties(batch.schema(), properties).expect("starts");
        encoder.push(batch.clone());
        let mut pieces = 1;
        while !encoder.encode_piece(cells).expect("encodes") {
            pieces += 1;
        }
        (encoder.finish().expect("ends"), pieces)
    }

    #[test]
    fn a_table_encoded_in_pieces_is_the_same_bytes_as_at_once() {
        for rows in [0, 1, 1023, 1025, 20_001, 45_000] {
            let batch = table(rows);
            let whole = at_once(&batch, codec::properties().expect("properties"));
            for cells in [1, 1000, 50_000, usize::MAX] {
                let (pieced, pieces) =
                    in_pieces(&batch, codec::properties().expect("properties"), cells);
                assert!(pieced == whole, "{rows} rows, {cells} cells a piece");
                if cells == 1 && rows > 20_000 {
                    assert!(pieces > 8, "{pieces} pieces");
                }
            }
        }
    }

    /// Writer properties that cut row groups of 30,000 rows.
    fn groups_of_30_000() -> WriterProperties {
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(30_000))
            .build()
    }

    #[test]
    fn row_groups_are_cut_where_the_writer_cuts_them() {
        let batch = table(70_000);
        let whole = at_once(&batch, groups_of_30_000());
        for cells in [1, 25_000, usize::MAX] {
            assert!(
                in_pieces(&batch, groups_of_30_000(), cells).0 == whole,
                "{cells} cells a piece"
            );
        }
    }

    #[test]
    fn a_table_given_a_row_group_at_a_time_and_taken_as_written_is_the_same_bytes() {
        let batch = table(70_000);
        let whole = at_once(&batch, groups_of_30_000());
        let mut encoder =
            TableEncoder::with_properties(batch.schema(), groups_of_30_000()).expect("starts");
        let (mut bytes, mut takes) = (Vec::new(), Vec::new());
        for start in (0..70_000).step_by(30_000) {
            encoder.push(batch.slice(start, (70_000 - start).min(30_000)));
            while !encoder.encode_piece(7_000).expect("encodes") {}
            let written = encoder.written();
            let taken = encoder.take_written().expect("taken");
            assert_eq!(taken.len(), written, "what written() said was there");
            takes.push(taken.len());
            bytes.extend(taken);
            assert_eq!(encoder.written(), 0, "nothing left once taken");
        }
        bytes.extend(encoder.finish().expect("ends"));
        assert!(bytes == whole, "the same file");
        assert!(
            takes.iter().all(|&taken| taken > 0),
            "each row group's bytes were out before the next was given: {takes:?}"
        );
    }
}
