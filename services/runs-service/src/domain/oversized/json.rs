//! JSON results as CSV, streamed: serde visitors walk the text's objects
//! one at a time, first to collect their keys (values skipped), then to
//! write each object as a CSV row. A key missing from an object or `null`
//! is an empty cell (NULL); strings, numbers and booleans are written as
//! their values; nested objects and arrays as their compact JSON.

use std::{collections::HashMap, fmt, fmt::Write as _};

use serde::Deserialize as _;
use serde::de::{
    self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
    value::{MapAccessDeserializer, SeqAccessDeserializer},
};

use super::shape::{NotTable, Shape, Tabular};

/// Rows of newline-delimited JSON below which a text is one object, not a
/// table.
const MIN_NDJSON_ROWS: usize = 2;

/// A JSON array of objects as CSV.
pub(super) fn array_to_csv(text: &str, max_columns: usize) -> Tabular {
    let mut columns = Columns::new(max_columns);
    let rows = match each_array_object(text, &mut KeyCollector(&mut columns)) {
        Ok(rows) => rows,
        Err(error) => return unusable(Shape::JsonArray, &columns, &error.to_string()),
    };
    if rows == 0 || columns.names.is_empty() {
        return Tabular::NotTabular;
    }
    let mut writer = RowWriter::new(&columns, text.len());
    match each_array_object(text, &mut writer) {
        Ok(_) => table(Shape::JsonArray, writer),
        Err(error) => unusable(Shape::JsonArray, &columns, &error.to_string()),
    }
}

/// One JSON object per line as CSV. A text whose first line is not a whole
/// object (a pretty-printed object), or that holds a single object, is not
/// a table.
pub(super) fn ndjson_to_csv(text: &str, max_columns: usize) -> Tabular {
    let mut columns = Columns::new(max_columns);
    let rows = match each_line_object(text, &mut KeyCollector(&mut columns)) {
        Ok(rows) => rows,
        Err(LineError { first: true, .. }) => return Tabular::NotTabular,
        Err(error) => return unusable(Shape::Ndjson, &columns, &error.to_string()),
    };
    if rows < MIN_NDJSON_ROWS || columns.names.is_empty() {
        return Tabular::NotTabular;
    }
    let mut writer = RowWriter::new(&columns, text.len());
    match each_line_object(text, &mut writer) {
        Ok(_) => table(Shape::Ndjson, writer),
        Err(error) => unusable(Shape::Ndjson, &columns, &error.to_string()),
    }
}

fn table(shape: Shape, writer: RowWriter<'_>) -> Tabular {
    match writer.writer.into_inner() {
        Ok(csv) => Tabular::Table { shape, csv },
        Err(error) => Tabular::Unusable(NotTable::Json {
            shape,
            message: error.error().to_string(),
        }),
    }
}

fn unusable(shape: Shape, columns: &Columns, message: &str) -> Tabular {
    Tabular::Unusable(if columns.overflowed {
        NotTable::TooManyKeys {
            limit: columns.limit,
        }
    } else {
        NotTable::Json {
            shape,
            message: message.to_owned(),
        }
    })
}

/// Hands each object of the array `text` to `sink`; the number of objects.
fn each_array_object<S: RowSink>(text: &str, sink: &mut S) -> Result<usize, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let rows = ArraySeed(sink).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(rows)
}

/// A line of newline-delimited JSON that is not an object.
#[derive(Debug)]
struct LineError {
    line: usize,
    /// Whether the line is the text's first that is not blank.
    first: bool,
    error: serde_json::Error,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The reader counts within the line; the line is the text's.
        let message = self.error.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.as_str(), |at| &message[..at]);
        write!(
            f,
            "{message} at line {} column {}",
            self.line,
            // An object expected where a line starts is reported at 0.
            self.error.column().max(1)
        )
    }
}

/// Hands the object of each non-blank line of `text` to `sink`; the number
/// of objects.
fn each_line_object<S: RowSink>(text: &str, sink: &mut S) -> Result<usize, LineError> {
    let mut rows = 0;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut deserializer = serde_json::Deserializer::from_str(line);
        ObjectSeed(&mut *sink)
            .deserialize(&mut deserializer)
            .and_then(|()| deserializer.end())
            .map_err(|error| LineError {
                line: index + 1,
                first: rows == 0,
                error,
            })?;
        rows += 1;
    }
    Ok(rows)
}

/// The column names, in the order first seen, and where each is.
#[derive(Debug)]
struct Columns {
    names: Vec<String>,
    positions: HashMap<String, usize>,
    limit: usize,
    overflowed: bool,
}

impl Columns {
    fn new(limit: usize) -> Self {
        Self {
            names: Vec::new(),
            positions: HashMap::new(),
            limit,
            overflowed: false,
        }
    }

    /// The position of `key`, a new column when it was not seen; `None`
    /// past the limit.
    fn position(&mut self, key: &str) -> Option<usize> {
        if let Some(&at) = self.positions.get(key) {
            return Some(at);
        }
        if self.names.len() >= self.limit {
            self.overflowed = true;
            return None;
        }
        self.positions.insert(key.to_owned(), self.names.len());
        self.names.push(key.to_owned());
        Some(self.names.len() - 1)
    }
}

/// What is done with each object.
trait RowSink {
    fn row<'de, A: MapAccess<'de>>(&mut self, map: A) -> Result<(), A::Error>;
}

/// The first pass: each object's keys become columns.
struct KeyCollector<'a>(&'a mut Columns);

impl RowSink for KeyCollector<'_> {
    fn row<'de, A: MapAccess<'de>>(&mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(()) = map.next_key_seed(NewKey(&mut *self.0))? {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// The second pass: each object becomes a CSV row.
struct RowWriter<'a> {
    columns: &'a Columns,
    cells: Vec<String>,
    writer: csv::Writer<Vec<u8>>,
}

impl<'a> RowWriter<'a> {
    fn new(columns: &'a Columns, text_bytes: usize) -> Self {
        // The CSV drops the keys and the JSON punctuation: usually well
        // under the text's size.
        let mut writer = csv::Writer::from_writer(Vec::with_capacity(text_bytes / 2));
        // Writing to memory cannot fail; an error would only cut the CSV,
        // which the import then refuses.
        let _ = writer.write_record(&columns.names);
        Self {
            columns,
            cells: vec![String::new(); columns.names.len()],
            writer,
        }
    }
}

impl RowSink for RowWriter<'_> {
    fn row<'de, A: MapAccess<'de>>(&mut self, mut map: A) -> Result<(), A::Error> {
        self.cells.iter_mut().for_each(String::clear);
        while let Some(at) = map.next_key_seed(KnownKey(self.columns))? {
            match at.and_then(|at| self.cells.get_mut(at)) {
                Some(cell) => {
                    cell.clear();
                    map.next_value_seed(Cell(cell))?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.writer
            .write_record(&self.cells)
            .map_err(de::Error::custom)
    }
}

/// The array: each element must be an object, handed to the sink.
struct ArraySeed<'a, S>(&'a mut S);

impl<'de, S: RowSink> DeserializeSeed<'de> for ArraySeed<'_, S> {
    type Value = usize;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, S: RowSink> Visitor<'de> for ArraySeed<'_, S> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut rows = 0;
        while let Some(()) = seq.next_element_seed(ObjectSeed(&mut *self.0))? {
            rows += 1;
        }
        Ok(rows)
    }
}

/// One object, handed to the sink.
struct ObjectSeed<'a, S>(&'a mut S);

impl<'de, S: RowSink> DeserializeSeed<'de> for ObjectSeed<'_, S> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, S: RowSink> Visitor<'de> for ObjectSeed<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        self.0.row(map)
    }
}

/// A key of the first pass: registered as a column.
struct NewKey<'a>(&'a mut Columns);

impl<'de> DeserializeSeed<'de> for NewKey<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for NewKey<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        match self.0.position(key) {
            Some(_) => Ok(()),
            None => Err(E::custom("too many distinct keys")),
        }
    }
}

/// A key of the second pass: its column's position.
struct KnownKey<'a>(&'a Columns);

impl<'de> DeserializeSeed<'de> for KnownKey<'_> {
    type Value = Option<usize>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KnownKey<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.positions.get(key).copied())
    }
}

/// A value written into its cell.
struct Cell<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Cell<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Cell<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.0.push_str(value);
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.0.push_str(if value { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        write!(self.0, "{value}").map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        write!(self.0, "{value}").map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        // As JSON writes it (`1.0`, `1e300`); JSON has no NaN or infinity.
        if let Some(number) = serde_json::Number::from_f64(value) {
            write!(self.0, "{number}").map_err(E::custom)?;
        }
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let value = serde_json::Value::deserialize(MapAccessDeserializer::new(map))?;
        write!(self.0, "{value}").map_err(de::Error::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let value = serde_json::Value::deserialize(SeqAccessDeserializer::new(seq))?;
        write!(self.0, "{value}").map_err(de::Error::custom)
    }
}
