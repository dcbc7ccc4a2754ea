//! Column types: which type every value of a column fits, and the typed
//! column built from its text, a range of rows at a time.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Date32Builder, Float64Builder, Int64Builder, StringArray,
    TimestampMicrosecondBuilder,
};

use crate::domain::datasource::ColumnType;

/// Which types every value seen so far fits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Inference {
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
    pub(super) fn observe(&mut self, value: &str) {
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

    pub(super) fn column_type(&self) -> ColumnType {
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

/// A column's typed values, built from its text a range of rows at a time:
/// the same array as converting the whole column at once.
#[derive(Debug)]
pub(super) enum Typed {
    /// Text stays the text array itself.
    Text,
    Integer(Int64Builder),
    Float(Float64Builder),
    Boolean(BooleanBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
}

impl Typed {
    /// An empty column of `column_type` with room for `rows` values.
    pub(super) fn new(column_type: ColumnType, rows: usize) -> Self {
        match column_type {
            ColumnType::Text => Self::Text,
            ColumnType::Integer => Self::Integer(Int64Builder::with_capacity(rows)),
            ColumnType::Float => Self::Float(Float64Builder::with_capacity(rows)),
            ColumnType::Boolean => Self::Boolean(BooleanBuilder::with_capacity(rows)),
            ColumnType::Date => Self::Date(Date32Builder::with_capacity(rows)),
            ColumnType::Timestamp => {
                Self::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows))
            }
        }
    }

    /// Appends the typed values of `text` (a range of the column's rows).
    pub(super) fn append(&mut self, text: &StringArray) {
        // Inference has checked every value, so a parse failing here cannot
        // happen; such a value would become NULL rather than stop the import.
        match self {
            Self::Text => {}
            Self::Integer(b) => text
                .iter()
                .for_each(|v| b.append_option(v.and_then(parse_integer))),
            Self::Float(b) => text
                .iter()
                .for_each(|v| b.append_option(v.and_then(parse_float))),
            Self::Boolean(b) => text
                .iter()
                .for_each(|v| b.append_option(v.and_then(parse_boolean))),
            Self::Date(b) => text
                .iter()
                .for_each(|v| b.append_option(v.and_then(parse_date))),
            Self::Timestamp(b) => text.iter().for_each(|v| {
                b.append_option(v.and_then(|v| {
                    parse_timestamp(v)
                        .or_else(|| parse_date(v).map(|days| i64::from(days) * 86_400_000_000))
                }));
            }),
        }
    }

    /// The typed array, once every row was appended; `text` is the whole
    /// column's text.
    pub(super) fn finish(self, text: StringArray) -> ArrayRef {
        match self {
            Self::Text => Arc::new(text),
            Self::Integer(mut b) => Arc::new(b.finish()),
            Self::Float(mut b) => Arc::new(b.finish()),
            Self::Boolean(mut b) => Arc::new(b.finish()),
            Self::Date(mut b) => Arc::new(b.finish()),
            Self::Timestamp(mut b) => Arc::new(b.finish()),
        }
    }
}
