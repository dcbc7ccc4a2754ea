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

use std::{collections::HashSet, sync::Arc};

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use datafusion::arrow::{
    array::{
        Array, ArrayRef, BooleanBuilder, Date32Builder, Float64Builder, Int64Builder, StringArray,
        StringBuilder, TimestampMicrosecondBuilder,
    },
    datatypes::{Field, Schema, SchemaRef},
    record_batch::RecordBatch,
};

use self::names::{sanitize, unique};
use crate::domain::datasource::{Column, ColumnType, ImportError, ImportLimits};

mod names;

/// A parsed CSV: its columns and all its rows in one batch.
#[derive(Debug)]
pub(super) struct ParsedTable {
    /// Column names and types, in the file's order.
    pub columns: Vec<Column>,
    /// The rows.
    pub batch: RecordBatch,
}

/// Parses `csv` within `limits`.
pub(super) fn parse_csv(csv: &[u8], limits: &ImportLimits) -> Result<ParsedTable, ImportError> {
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
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv);
    let names = read_header(&mut reader, limits)?;
    let columns = read_rows(&mut reader, names.len(), csv.len(), limits)?;
    build_table(names, columns)
}

/// The header row's column names.
fn read_header(
    reader: &mut csv::Reader<&[u8]>,
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

/// The data rows, column by column as text, with what each column's values
/// look like.
fn read_rows(
    reader: &mut csv::Reader<&[u8]>,
    width: usize,
    file_bytes: usize,
    limits: &ImportLimits,
) -> Result<Vec<(StringBuilder, Inference)>, ImportError> {
    // Rough per-column capacity from the file size, to avoid regrowing.
    let capacity_hint = file_bytes / width.max(1);
    let mut columns: Vec<(StringBuilder, Inference)> = (0..width)
        .map(|_| {
            (
                StringBuilder::with_capacity(1024, capacity_hint),
                Inference::default(),
            )
        })
        .collect();
    let mut record = csv::StringRecord::new();
    let mut rows = 0usize;
    while read(reader, &mut record)? {
        let line = record.position().map_or(0, csv::Position::line);
        rows += 1;
        // Checked before the row is kept: a short row costs a full row of
        // cells, so a small file of short rows must stop here, not after.
        if rows.saturating_mul(width) > limits.max_cells {
            return Err(ImportError::TooManyCells {
                limit: limits.max_cells,
                columns: width,
                rows: rows - 1,
                line,
            });
        }
        if rows > limits.max_rows {
            // Keep counting, so that the error says how many rows there are.
            continue;
        }
        if record.len() > width && record.iter().skip(width).any(|f| !f.trim().is_empty()) {
            return Err(ImportError::ExtraFields {
                line,
                expected: width,
                actual: record.len(),
            });
        }
        check_fields(&record, line, limits)?;
        for (index, (builder, inference)) in columns.iter_mut().enumerate() {
            let field = record.get(index).unwrap_or("").trim();
            if field.is_empty() {
                builder.append_null();
            } else {
                inference.observe(field);
                builder.append_value(field);
            }
        }
    }
    if rows > limits.max_rows {
        return Err(ImportError::TooManyRows {
            limit: limits.max_rows,
            actual: rows,
        });
    }
    Ok(columns)
}

/// The typed table: each column converted to the type its values fit.
fn build_table(
    names: Vec<String>,
    text_columns: Vec<(StringBuilder, Inference)>,
) -> Result<ParsedTable, ImportError> {
    let width = names.len();
    let mut columns = Vec::with_capacity(width);
    let mut fields = Vec::with_capacity(width);
    let mut arrays = Vec::with_capacity(width);
    for (name, (mut builder, inference)) in names.into_iter().zip(text_columns) {
        let column_type = inference.column_type();
        let array = convert(builder.finish(), column_type);
        fields.push(Field::new(&name, array.data_type().clone(), true));
        arrays.push(array);
        columns.push(Column { name, column_type });
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema, arrays).map_err(|e| {
        ImportError::Storage(anyhow::Error::new(e).context("failed to build the table"))
    })?;
    Ok(ParsedTable { columns, batch })
}

/// Reads the next record, turning the reader's errors into import errors.
fn read(
    reader: &mut csv::Reader<&[u8]>,
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

/// Which types every value seen so far fits.
#[derive(Debug, Clone, Copy)]
struct Inference {
    seen: bool,
    integer: bool,
    float: bool,
    boolean: bool,
    date: bool,
    timestamp: bool,
}

impl Default for Inference {
    fn default() -> Self {
        Self {
            seen: false,
            integer: true,
            float: true,
            boolean: true,
            date: true,
            timestamp: true,
        }
    }
}

impl Inference {
    fn observe(&mut self, value: &str) {
        self.seen = true;
        if self.integer {
            self.integer = parse_integer(value).is_some();
        }
        if self.float {
            self.float = parse_float(value).is_some();
        }
        if self.boolean {
            self.boolean = parse_boolean(value).is_some();
        }
        let is_date = (self.date || self.timestamp) && parse_date(value).is_some();
        if self.date {
            self.date = is_date;
        }
        if self.timestamp {
            self.timestamp = is_date || parse_timestamp(value).is_some();
        }
    }

    fn column_type(&self) -> ColumnType {
        if !self.seen {
            ColumnType::Text
        } else if self.integer {
            ColumnType::Integer
        } else if self.float {
            ColumnType::Float
        } else if self.boolean {
            ColumnType::Boolean
        } else if self.date {
            ColumnType::Date
        } else if self.timestamp {
            ColumnType::Timestamp
        } else {
            ColumnType::Text
        }
    }
}

/// The digits of a number without a redundant leading zero (`0`, `0.5` and
/// `0e3` are numbers, `007` is not).
fn plain_digits(digits: &str) -> bool {
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !(digits.len() > 1 && digits.starts_with('0'))
}

fn parse_integer(value: &str) -> Option<i64> {
    let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
    if !plain_digits(digits) {
        return None;
    }
    value.parse().ok()
}

fn parse_float(value: &str) -> Option<f64> {
    let unsigned = value.strip_prefix(['-', '+']).unwrap_or(value);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let whole_ok = whole.is_empty() || plain_digits(whole);
    let fraction_ok = fraction.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit()));
    let has_digit = !whole.is_empty() || fraction.is_some_and(|f| !f.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    if !(whole_ok && fraction_ok && has_digit && exponent_ok) {
        return None;
    }
    value.parse().ok()
}

fn parse_boolean(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date.
fn parse_date(value: &str) -> Option<i32> {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = &value[range];
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let year = i32::try_from(number(0..4)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, number(5..7)?, number(8..10)?)?;
    let days = date.signed_duration_since(NaiveDate::default()).num_days();
    i32::try_from(days).ok()
}

/// Microseconds since the Unix epoch (UTC) of an RFC 3339 or
/// `YYYY-MM-DD HH:MM:SS[.fff]` timestamp.
fn parse_timestamp(value: &str) -> Option<i64> {
    let b = value.as_bytes();
    if b.len() < 19 || b[4] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if let Ok(naive) = NaiveDateTime::parse_from_str(value, "%Y-%m-%d %H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S%.f"))
    {
        return Some(naive.and_utc().timestamp_micros());
    }
    DateTime::parse_from_rfc3339(value)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// The typed array of `text`, whose values all fit `column_type`.
fn convert(text: StringArray, column_type: ColumnType) -> ArrayRef {
    let n = text.len();
    // Inference has checked every value, so a parse failing here cannot
    // happen; such a value would become NULL rather than stop the import.
    match column_type {
        ColumnType::Text => Arc::new(text),
        ColumnType::Integer => {
            let mut b = Int64Builder::with_capacity(n);
            text.iter()
                .for_each(|v| b.append_option(v.and_then(parse_integer)));
            Arc::new(b.finish())
        }
        ColumnType::Float => {
            let mut b = Float64Builder::with_capacity(n);
            text.iter()
                .for_each(|v| b.append_option(v.and_then(parse_float)));
            Arc::new(b.finish())
        }
        ColumnType::Boolean => {
            let mut b = BooleanBuilder::with_capacity(n);
            text.iter()
                .for_each(|v| b.append_option(v.and_then(parse_boolean)));
            Arc::new(b.finish())
        }
        ColumnType::Date => {
            let mut b = Date32Builder::with_capacity(n);
            text.iter()
                .for_each(|v| b.append_option(v.and_then(parse_date)));
            Arc::new(b.finish())
        }
        ColumnType::Timestamp => {
            let mut b = TimestampMicrosecondBuilder::with_capacity(n);
            text.iter().for_each(|v| {
                b.append_option(v.and_then(|v| {
                    parse_timestamp(v)
                        .or_else(|| parse_date(v).map(|days| i64::from(days) * 86_400_000_000))
                }));
            });
            Arc::new(b.finish())
        }
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
