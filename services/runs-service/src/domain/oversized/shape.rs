//! What a large result is: a table of some shape, or why it is not one.

/// How a tabular result was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `[{…}, {…}]`.
    JsonArray,
    /// One JSON object per line.
    Ndjson,
    /// Comma-separated values with a header row.
    Csv,
}

/// What a large result is.
#[derive(Debug)]
pub enum Tabular {
    /// A table: its CSV (header first), ready for an import.
    Table {
        /// How the result was written.
        shape: Shape,
        /// The table as CSV.
        csv: Vec<u8>,
    },
    /// Not a table: text to cut.
    NotTabular,
    /// Written as a table but not one that can be read: why.
    Unusable(NotTable),
}

/// Why a result written as a table is not one; `texts::not_a_table` says
/// it in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotTable {
    /// The JSON is malformed, or an element is not an object: the JSON
    /// reader's words (with line and column).
    Json {
        /// How the result was written.
        shape: Shape,
        /// What the reader found, in its words.
        message: String,
    },
    /// The objects name more distinct keys than a table has columns.
    TooManyKeys {
        /// The most columns of a table.
        limit: usize,
    },
}
