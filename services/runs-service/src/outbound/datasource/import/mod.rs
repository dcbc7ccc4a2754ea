//! CSV to an Arrow table: parsing, safe column names and type inference.
//!
//! Rules, as the model and the client see them:
//! - A UTF-8 byte order mark is dropped; the bytes must otherwise be UTF-8.
//! - The first row names the columns. Names are trimmed and made lowercase
//!   `snake_case` of `[a-z0-9_]`, so that SQL never needs quotes: a blank name
//!   becomes `column_N` (N its position), one starting with a digit gets a
//!   `c_` prefix, one the SQL parser would not read as a plain column name
//!   (`select`, `from`, …) gets a `_` suffix, and repeats get `_2`, `_3`, ….
//! - A row shorter than the header is padded with NULLs, and counts as a full
//!   row against the cell limit (rows × columns). A row longer than the
//!   header is refused unless its extra fields are all empty (a trailing comma),
//!   because data without a column name would be silently misread.
//! - A field that is empty or only spaces is NULL.
//! - Each column gets the narrowest type every non-NULL value fits: Integer
//!   (i64, without leading zeros so that codes such as ZIP codes stay text),
//!   Float, Boolean (`true`/`false`, any case), Date (`YYYY-MM-DD`), Timestamp
//!   (RFC 3339, or `YYYY-MM-DD HH:MM:SS[.fff]` read as UTC; dates mixed in are
//!   midnight), otherwise Text. A column with no values at all is Text.

use std::collections::HashSet;

use datafusion::arrow::record_batch::RecordBatch;

use self::names::{sanitize, unique};
#[cfg(test)]
use self::values::Inference;
#[cfg(test)]
use crate::domain::datasource::ColumnType;
use crate::domain::datasource::{Column, ImportError, ImportLimits};

mod groups;
mod names;
mod pieces;
mod values;

pub(super) use groups::{Read, RowGroups};
pub(super) use pieces::{Conversion, CsvParse};

/// A parsed CSV: its columns and all its rows in one batch.
#[derive(Debug)]
pub(super) struct ParsedTable {
    /// Column names and types, in the file's order.
    pub columns: Vec<Column>,
    /// The rows.
    pub batch: RecordBatch,
}

/// Parses `csv` within `limits`, all at once.
pub(super) fn parse_csv(csv: &[u8], limits: &ImportLimits) -> Result<ParsedTable, ImportError> {
    let mut parse = CsvParse::start(csv, limits)?;
    while !parse.read_piece(usize::MAX)? {}
    let mut conversion = parse.finish()?;
    while !conversion.convert_piece(usize::MAX) {}
    conversion.finish()
}

/// The header row's column names.
fn read_header<R: std::io::Read>(
    reader: &mut csv::Reader<R>,
    limits: &ImportLimits,
) -> Result<Vec<String>, ImportError> {
    let mut record = csv::StringRecord::new();
    if !read(reader, &mut record)? {
        return Err(ImportError::Empty);
    }
    let width = record.len();
    if width > limits.max_columns {
        return Err(ImportError::TooManyColumns {
            limit: limits.max_columns,
            actual: width,
        });
    }
    check_fields(&record, 1, limits)?;
    if record.iter().all(|name| name.trim().is_empty()) {
        return Err(ImportError::NoHeader);
    }
    Ok(column_names(record.iter()))
}

/// Reads the next record, turning the reader's errors into import errors.
fn read<R: std::io::Read>(
    reader: &mut csv::Reader<R>,
    record: &mut csv::StringRecord,
) -> Result<bool, ImportError> {
    reader.read_record(record).map_err(|error| {
        let line = error.position().map_or(0, csv::Position::line);
        match error.kind() {
            csv::ErrorKind::Utf8 { pos, .. } => ImportError::InvalidUtf8 {
                line: pos.as_ref().map_or(line, csv::Position::line),
            },
            _ => ImportError::InvalidCsv {
                line,
                message: error.to_string(),
            },
        }
    })
}

fn check_fields(
    record: &csv::StringRecord,
    line: u64,
    limits: &ImportLimits,
) -> Result<(), ImportError> {
    match record
        .iter()
        .enumerate()
        .find(|(_, field)| field.len() > limits.max_field_bytes)
    {
        Some((index, field)) => Err(ImportError::FieldTooLarge {
            line,
            column: index + 1,
            limit: limits.max_field_bytes,
            actual: field.len(),
        }),
        None => Ok(()),
    }
}

/// Safe, unique column names for a header.
pub(super) fn column_names<'a>(header: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    header
        .enumerate()
        .map(|(index, raw)| {
            let base = sanitize(raw, "c_").unwrap_or_else(|| format!("column_{}", index + 1));
            unique(base, &mut taken)
        })
        .collect()
}

/// A safe table name from `name`, not in `taken`.
pub(super) fn table_name(name: &str, taken: &HashSet<String>) -> String {
    let trimmed = name.trim();
    let stem = [".csv", ".tsv", ".txt"]
        .iter()
        .find_map(|ext| {
            let cut = trimmed.len().checked_sub(ext.len())?;
            (trimmed.is_char_boundary(cut) && trimmed[cut..].eq_ignore_ascii_case(ext))
                .then(|| &trimmed[..cut])
        })
        .unwrap_or(trimmed);
    let base = sanitize(stem, "t_").unwrap_or_else(|| "data".to_owned());
    let mut taken = taken.clone();
    unique(base, &mut taken)
}

#[cfg(test)]
mod tests;
