//! The rows of a checked CSV read again, a row group at a time: once a
//! first pass (`CsvParse::infer`) has checked every row and inferred the
//! columns' types, an import reads the rows again and converts, encodes and
//! hands on one row group before reading the next, so that it never holds
//! more of the table than one row group (besides the CSV itself).

use std::io::Cursor;

use bytes::Bytes;
use datafusion::arrow::array::StringBuilder;

use super::{
    pieces::{Conversion, after_bom, checked, field, piece_end, records},
    read,
};
use crate::domain::datasource::{Column, ImportError, ImportLimits};

/// A checked CSV's rows, read a row group at a time.
pub(in super::super) struct RowGroups {
    reader: csv::Reader<Cursor<Bytes>>,
    columns: Vec<Column>,
    group_rows: usize,
    /// The current group's text, column by column.
    texts: Vec<StringBuilder>,
    /// Rows in the current group.
    rows: usize,
    record: csv::StringRecord,
}

impl RowGroups {
    /// The rows of `csv`, whose header names `columns` and whose every row
    /// was checked within `limits`, in groups of `group_rows` rows.
    pub(in super::super) fn new(
        csv: Bytes,
        columns: Vec<Column>,
        limits: &ImportLimits,
        group_rows: usize,
    ) -> Result<Self, ImportError> {
        let bytes = checked(&csv, limits)?.len();
        let mut reader = records(after_bom(csv, bytes));
        let mut record = csv::StringRecord::new();
        // The header, already read by the first pass.
        read(&mut reader, &mut record)?;
        let mut groups = Self {
            reader,
            columns,
            group_rows: group_rows.max(1),
            texts: Vec::new(),
            rows: 0,
            record,
        };
        groups.texts = groups.empty_group();
        Ok(groups)
    }

    fn empty_group(&self) -> Vec<StringBuilder> {
        (0..self.columns.len())
            .map(|_| StringBuilder::new())
            .collect()
    }

    /// Reads rows until at least `piece_bytes` more of the CSV were read
    /// (at least one row) or the group is full.
    pub(in super::super) fn read_piece(&mut self, piece_bytes: usize) -> Result<Read, ImportError> {
        let until = piece_end(&self.reader, piece_bytes);
        loop {
            if self.rows >= self.group_rows {
                return Ok(Read::Group(self.take_group()));
            }
            if !read(&mut self.reader, &mut self.record)? {
                return Ok(if self.rows > 0 {
                    Read::Group(self.take_group())
                } else {
                    Read::Ended
                });
            }
            for (index, text) in self.texts.iter_mut().enumerate() {
                text.append_option(field(&self.record, index));
            }
            self.rows += 1;
            if self.reader.position().byte() >= until && self.rows < self.group_rows {
                return Ok(Read::More);
            }
        }
    }

    /// The current group's text, to be typed; the next group starts empty.
    fn take_group(&mut self) -> Conversion {
        let empty = self.empty_group();
        let texts = std::mem::replace(&mut self.texts, empty)
            .into_iter()
            .map(|mut text| text.finish())
            .collect();
        self.rows = 0;
        Conversion::new(self.columns.clone(), texts)
    }
}

/// What reading a piece of a group gave.
#[derive(Debug)]
pub(in super::super) enum Read {
    /// The group is not full yet.
    More,
    /// A whole group (the last may be shorter), ready to be typed.
    Group(Conversion),
    /// The CSV has no more rows.
    Ended,
}
