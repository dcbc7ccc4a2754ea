//! Tool results too large for the model's context: which of them are
//! tables (a JSON array of objects, newline-delimited JSON objects, CSV),
//! turned into CSV for a data-source import without holding the whole
//! result as JSON values, and where the others are cut.
//!
//! Memory: the conversion reads the result's text once to collect the
//! column names (values skipped, not built) and once to write the CSV, one
//! object at a time; it holds the text, the CSV being written and one
//! object, never a `serde_json::Value` of the whole array. CSV text is
//! handed on as it is, without a copy.

mod json;
mod shape;
#[cfg(test)]
mod tests;

pub use shape::{NotTable, Shape, Tabular};

/// Rows of the CSV probe that must all have the header's width before a
/// text is taken for CSV.
const CSV_PROBE_ROWS: usize = 10;

/// Longest header name of a text taken for CSV: a "header" longer than
/// this is prose that happens to hold commas.
const MAX_HEADER_NAME: usize = 100;

/// What `text` is, and its CSV when it is a table whose objects name at
/// most `max_columns` keys. The text is taken: a CSV result becomes the
/// import's bytes without a copy, a JSON one is dropped once converted.
pub fn tabulate(text: String, max_columns: usize) -> Tabular {
    let start = text.trim_start();
    if start.starts_with('[') {
        return json::array_to_csv(&text, max_columns);
    }
    if start.starts_with('{') {
        return json::ndjson_to_csv(&text, max_columns);
    }
    if looks_like_csv(&text) {
        return Tabular::Table {
            shape: Shape::Csv,
            csv: text.into_bytes(),
        };
    }
    Tabular::NotTabular
}

/// Whether `text` reads as CSV: a header of at least two short, named
/// columns, and at least two rows below it, each of the header's width.
/// The import checks the rest.
fn looks_like_csv(text: &str) -> bool {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let Some(Ok(header)) = records.next() else {
        return false;
    };
    let named = header
        .iter()
        .all(|name| !name.trim().is_empty() && name.len() <= MAX_HEADER_NAME);
    if header.len() < 2 || !named {
        return false;
    }
    let mut rows = 0;
    for record in records.take(CSV_PROBE_ROWS) {
        match record {
            Ok(record) if record.len() == header.len() => rows += 1,
            _ => return false,
        }
    }
    rows >= 2
}

/// The first `rows` data rows of `csv`, each cell cut to `cell_chars`
/// characters, an empty one shown as `NULL` (as a query shows it).
pub fn first_rows(csv: &[u8], rows: usize, cell_chars: usize) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(csv.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(csv));
    reader
        .records()
        .take(rows)
        .map_while(Result::ok)
        .map(|record| {
            record
                .iter()
                .map(|cell| match cell.trim() {
                    "" => "NULL".to_owned(),
                    cell => cell.chars().take(cell_chars).collect(),
                })
                .collect()
        })
        .collect()
}

/// A text cut for the model: its first part and where it was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The text up to the cut, on a character boundary.
    pub head: String,
    /// The bytes of the whole text.
    pub total_bytes: usize,
    /// The line the cut falls on (1-based).
    pub cut_line: usize,
    /// The lines of the whole text.
    pub total_lines: usize,
}

impl Cut {
    /// `text` cut after at most `limit` bytes.
    pub fn of(text: &str, limit: usize) -> Self {
        let head = &text[..text.floor_char_boundary(limit)];
        let newlines = |s: &str| s.bytes().filter(|&b| b == b'\n').count();
        Self {
            head: head.to_owned(),
            total_bytes: text.len(),
            cut_line: newlines(head) + 1,
            total_lines: newlines(text.trim_end_matches('\n')) + 1,
        }
    }

    /// The bytes left out.
    pub fn left_out(&self) -> usize {
        self.total_bytes - self.head.len()
    }
}
