//! Parsing a CSV a piece at a time: the rows of about a number of CSV bytes
//! per piece, then the columns' typed values about a number of cells per
//! piece, so that a large import can give way to others between pieces.
//! Read whole or in pieces, a CSV gives the same table.
//!
//! A parse either keeps the rows' text (a whole table, [`CsvParse::start`])
//! or only checks the rows and infers the columns' types
//! ([`CsvParse::infer`]), for an import that then reads the rows again a
//! row group at a time (`groups.rs`).

use std::{io::Cursor, sync::Arc};

use bytes::Bytes;

use datafusion::arrow::{
    array::{Array, StringArray, StringBuilder},
    datatypes::{Field, Schema, SchemaRef},
    record_batch::RecordBatch,
};

use super::{
    ParsedTable, check_fields, read, read_header,
    values::{Inference, Typed},
};
use crate::domain::datasource::{Column, ImportError, ImportLimits};

/// A CSV whose rows are being read, with what each column's values look
/// like, and, when kept, the columns' text.
pub(in super::super) struct CsvParse<R> {
    reader: csv::Reader<R>,
    limits: ImportLimits,
    names: Vec<String>,
    inferences: Vec<Inference>,
    /// The columns' text; `None` when only the types are inferred.
    texts: Option<Vec<StringBuilder>>,
    record: csv::StringRecord,
    /// Data rows read so far, also past the limit (for the error to say
    /// how many there are).
    rows: usize,
    /// The CSV's bytes, the byte order mark not counted.
    bytes: usize,
}

impl<'a> CsvParse<&'a [u8]> {
    /// Starts reading `csv`: the checks on the whole file and its header.
    pub(in super::super) fn start(
        csv: &'a [u8],
        limits: &ImportLimits,
    ) -> Result<Self, ImportError> {
        let data = checked(csv, limits)?;
        Self::new(data, data.len(), limits, true)
    }
}

impl CsvParse<Cursor<Bytes>> {
    /// Starts checking `csv` and inferring its columns' types, without
    /// keeping its rows.
    pub(in super::super) fn infer(csv: Bytes, limits: &ImportLimits) -> Result<Self, ImportError> {
        let bytes = checked(&csv, limits)?.len();
        Self::new(after_bom(csv, bytes), bytes, limits, false)
    }
}

/// A reader of the last `bytes` of `csv` (its data after the byte order
/// mark).
pub(super) fn after_bom(csv: Bytes, bytes: usize) -> Cursor<Bytes> {
    let mut cursor = Cursor::new(csv);
    cursor.set_position(u64::try_from(cursor.get_ref().len() - bytes).unwrap_or(0));
    cursor
}

/// A reader of CSV records as an import reads them: the header is a
/// record, and records may be shorter or longer than it.
pub(super) fn records<R: std::io::Read>(data: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(data)
}

/// The CSV's data after its byte order mark, if it is not too large or
/// empty.
pub(super) fn checked<'a>(csv: &'a [u8], limits: &ImportLimits) -> Result<&'a [u8], ImportError> {
    if csv.len() > limits.max_bytes {
        return Err(ImportError::TooLarge {
            limit: limits.max_bytes,
            actual: csv.len(),
        });
    }
    let csv = csv.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(csv);
    if csv.iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::Empty);
    }
    Ok(csv)
}

impl<R: std::io::Read> CsvParse<R> {
    fn new(data: R, bytes: usize, limits: &ImportLimits, keep: bool) -> Result<Self, ImportError> {
        let mut reader = records(data);
        let names = read_header(&mut reader, limits)?;
        let width = names.len();
        // Rough per-column capacity from the file size, to avoid regrowing.
        let capacity_hint = bytes / width.max(1);
        let texts = keep.then(|| {
            (0..width)
                .map(|_| StringBuilder::with_capacity(1024, capacity_hint))
                .collect()
        });
        Ok(Self {
            reader,
            limits: *limits,
            names,
            inferences: vec![Inference::default(); width],
            texts,
            record: csv::StringRecord::new(),
            rows: 0,
            bytes,
        })
    }

    /// The CSV's bytes, the byte order mark not counted.
    pub(in super::super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Reads rows until at least `piece_bytes` more of the CSV were read
    /// (at least one row); whether the CSV has ended.
    pub(in super::super) fn read_piece(&mut self, piece_bytes: usize) -> Result<bool, ImportError> {
        let until = piece_end(&self.reader, piece_bytes);
        loop {
            if !read(&mut self.reader, &mut self.record)? {
                return Ok(true);
            }
            self.keep_row()?;
            if self.reader.position().byte() >= until {
                return Ok(false);
            }
        }
    }

    /// Checks the row just read and keeps its fields.
    fn keep_row(&mut self) -> Result<(), ImportError> {
        let (record, limits, width) = (&self.record, &self.limits, self.inferences.len());
        let line = record.position().map_or(0, csv::Position::line);
        self.rows += 1;
        // Checked before the row is kept: a short row costs a full row of
        // cells, so a small file of short rows must stop here, not after.
        if self.rows.saturating_mul(width) > limits.max_cells {
            return Err(ImportError::TooManyCells {
                limit: limits.max_cells,
                columns: width,
                rows: self.rows - 1,
                line,
            });
        }
        if self.rows > limits.max_rows {
            // Keep counting, so that the error says how many rows there are.
            return Ok(());
        }
        if record.len() > width && record.iter().skip(width).any(|f| !f.trim().is_empty()) {
            return Err(ImportError::ExtraFields {
                line,
                expected: width,
                actual: record.len(),
            });
        }
        check_fields(record, line, limits)?;
        for (index, inference) in self.inferences.iter_mut().enumerate() {
            let value = field(record, index);
            if let Some(value) = value {
                inference.observe(value);
            }
            if let Some(texts) = &mut self.texts {
                texts[index].append_option(value);
            }
        }
        Ok(())
    }

    /// The columns' names and types and the data rows, once every row was
    /// read.
    pub(in super::super) fn finish_shape(self) -> Result<(Vec<Column>, usize), ImportError> {
        let (columns, _, rows) = self.finish_columns()?;
        Ok((columns, rows))
    }

    /// The kept text columns, once every row was read, ready to be typed.
    pub(in super::super) fn finish(self) -> Result<Conversion, ImportError> {
        let (columns, texts, _) = self.finish_columns()?;
        let texts = texts
            .unwrap_or_default()
            .into_iter()
            .map(|mut builder| builder.finish())
            .collect();
        Ok(Conversion::new(columns, texts))
    }

    fn finish_columns(self) -> Result<TextColumns, ImportError> {
        if self.rows > self.limits.max_rows {
            return Err(ImportError::TooManyRows {
                limit: self.limits.max_rows,
                actual: self.rows,
            });
        }
        let columns = self
            .names
            .into_iter()
            .zip(&self.inferences)
            .map(|(name, inference)| Column {
                name,
                column_type: inference.column_type(),
            })
            .collect();
        Ok((columns, self.texts, self.rows))
    }
}

/// The columns, their kept text, and the data rows read.
type TextColumns = (Vec<Column>, Option<Vec<StringBuilder>>, usize);

/// Where a piece of `piece_bytes` read from `reader`'s position ends (its
/// byte offset in the CSV).
pub(super) fn piece_end<R: std::io::Read>(reader: &csv::Reader<R>, piece_bytes: usize) -> u64 {
    reader
        .position()
        .byte()
        .saturating_add(u64::try_from(piece_bytes).unwrap_or(u64::MAX))
}

/// The value of field `index` of `record`: trimmed, and `None` when empty,
/// only spaces or missing (a short row).
pub(super) fn field(record: &csv::StringRecord, index: usize) -> Option<&str> {
    Some(record.get(index)?.trim()).filter(|value| !value.is_empty())
}

/// The columns of a read CSV, each being converted to the type its values
/// fit, column after column.
#[derive(Debug)]
pub(in super::super) struct Conversion {
    columns: Vec<Column>,
    texts: Vec<StringArray>,
    typed: Vec<Typed>,
    rows: usize,
    /// The column and row converted next.
    column: usize,
    row: usize,
}

impl Conversion {
    /// The conversion of `texts`, the text of `columns`, to the columns'
    /// types.
    pub(in super::super) fn new(columns: Vec<Column>, texts: Vec<StringArray>) -> Self {
        let rows = texts.first().map_or(0, Array::len);
        let typed = columns
            .iter()
            .map(|column| Typed::new(column.column_type, rows))
            .collect();
        Self {
            columns,
            texts,
            typed,
            rows,
            column: 0,
            row: 0,
        }
    }

    /// Converts about `cells` more cells (a text column costs none); whether
    /// every column is converted.
    pub(in super::super) fn convert_piece(&mut self, cells: usize) -> bool {
        let mut budget = cells.max(1);
        while let (Some(text), Some(typed)) =
            (self.texts.get(self.column), self.typed.get_mut(self.column))
        {
            if matches!(typed, Typed::Text) || self.row >= self.rows {
                (self.column, self.row) = (self.column + 1, 0);
                continue;
            }
            if budget == 0 {
                return false;
            }
            let take = budget.min(self.rows - self.row);
            typed.append(&text.slice(self.row, take));
            self.row += take;
            budget -= take;
        }
        true
    }

    /// The typed table, once every column is converted.
    pub(in super::super) fn finish(self) -> Result<ParsedTable, ImportError> {
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays = Vec::with_capacity(self.columns.len());
        for ((column, typed), text) in self.columns.iter().zip(self.typed).zip(self.texts) {
            let array = typed.finish(text);
            fields.push(Field::new(&column.name, array.data_type().clone(), true));
            arrays.push(array);
        }
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema, arrays).map_err(|e| {
            ImportError::Storage(anyhow::Error::new(e).context("failed to build the table"))
        })?;
        Ok(ParsedTable {
            columns: self.columns,
            batch,
        })
    }
}
