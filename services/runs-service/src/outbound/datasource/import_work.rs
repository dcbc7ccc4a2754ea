//! An import's CPU work as pieces for the pool (`pool.rs`), in two passes
//! over the CSV. The first checks every row and infers the columns' types,
//! about [`Capacity::piece_bytes`] of the file a piece, keeping nothing of
//! the rows. The second reads the rows again a row group at a time, then
//! types and encodes that group about as many cells a piece as such a piece
//! of the file holds, and hands on the encoded bytes once they pass a part's
//! size: so an import holds the CSV, one row group and about a part of the
//! encoded table, never the whole table. Between pieces the import waits
//! for its organization's next turn, so that another organization's import
//! waits behind at most about one piece of it.

use std::io::Cursor;

use bytes::Bytes;
use datafusion::arrow::array::StringArray;

use super::{
    codec,
    encoder::TableEncoder,
    import::{Conversion, CsvParse, Read, RowGroups},
    pool::Turn,
    slots::Slot,
};
use crate::domain::datasource::{Column, ImportError, ImportLimits};

#[cfg(doc)]
use crate::domain::datasource::Capacity;

/// An import's table, parsed and encoded.
#[derive(Debug)]
pub(super) struct Encoded {
    pub columns: Vec<Column>,
    pub rows: usize,
    /// The stored bytes not handed on as parts before: all of them when no
    /// part size was set.
    pub content: Vec<u8>,
    /// The import's slot, held until the table is stored.
    pub slot: Slot,
}

/// What a turn of an import that ended its work for now gives.
#[derive(Debug)]
pub(super) enum Produced {
    /// The next bytes of the stored table, at least a part's size; the
    /// work goes on once they are handed on.
    Part(Vec<u8>),
    /// The whole table is encoded.
    Table(Encoded),
}

/// Where an import's work is.
enum Stage {
    /// Not started: the CSV.
    Waiting(Bytes),
    /// The first pass, over the CSV.
    Checking(Box<CsvParse<Cursor<Bytes>>>, Bytes),
    /// The second pass: reading a group's rows, typing them, encoding them.
    Reading(Box<Writing>),
    Typing(Box<Writing>, Box<Conversion>),
    Encoding(Box<Writing>),
    /// Done or failed.
    Over,
}

/// The second pass over the CSV.
struct Writing {
    groups: RowGroups,
    encoder: TableEncoder,
    columns: Vec<Column>,
    rows: usize,
}

/// An import's CPU work, a piece at a time. Dropped part-way (its caller
/// stopped waiting), it gives back its memory and its slot.
pub(super) struct ImportWork {
    stage: Stage,
    limits: ImportLimits,
    piece_bytes: usize,
    /// Cells typed or encoded per piece: as many as `piece_bytes` of the
    /// file hold, on average.
    piece_cells: usize,
    /// Encoded bytes handed on as a part once there are this many.
    part_bytes: Option<usize>,
    /// Whether the whole work is done in one turn (up to a part): the CSV
    /// fits in one piece.
    whole: bool,
    slot: Option<Slot>,
}

impl ImportWork {
    /// The work of importing `csv`, in pieces of about `piece_bytes`,
    /// holding `slot` until it ends, and handing on the encoded table in
    /// parts of at least `part_bytes` when set (otherwise whole at the end).
    pub(super) fn new(
        csv: Bytes,
        limits: ImportLimits,
        piece_bytes: usize,
        part_bytes: Option<usize>,
        slot: Slot,
    ) -> Self {
        Self {
            whole: csv.len() <= piece_bytes,
            stage: Stage::Waiting(csv),
            limits,
            piece_bytes: piece_bytes.max(1),
            piece_cells: 1,
            part_bytes: part_bytes.map(|bytes| bytes.max(1)),
            slot: Some(slot),
        }
    }

    /// Does the next piece: all of the work up to the next part when the
    /// whole file fits in one.
    pub(super) fn piece(&mut self) -> Turn<Result<Produced, ImportError>> {
        let mut step = self.step();
        while self.whole && matches!(step, Ok(None)) {
            step = self.step();
        }
        match step {
            Ok(None) => Turn::More,
            Ok(Some(produced)) => Turn::Done(Ok(produced)),
            Err(error) => {
                self.stage = Stage::Over;
                self.slot = None;
                Turn::Done(Err(error))
            }
        }
    }

    fn step(&mut self) -> Result<Option<Produced>, ImportError> {
        self.stage = match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Waiting(csv) => {
                let parse = CsvParse::infer(Bytes::clone(&csv), &self.limits)?;
                self.check(Box::new(parse), csv)?
            }
            Stage::Checking(parse, csv) => self.check(parse, csv)?,
            Stage::Reading(mut writing) => match writing.groups.read_piece(self.piece_bytes)? {
                Read::More => Stage::Reading(writing),
                Read::Group(conversion) => Stage::Typing(writing, Box::new(conversion)),
                Read::Ended => return self.encoded(*writing).map(Some),
            },
            Stage::Typing(mut writing, mut conversion) => {
                if !conversion.convert_piece(self.piece_cells) {
                    Stage::Typing(writing, conversion)
                } else {
                    writing.encoder.push(conversion.finish()?.batch);
                    Stage::Encoding(writing)
                }
            }
            Stage::Encoding(mut writing) => {
                let done = writing
                    .encoder
                    .encode_piece(self.piece_cells)
                    .map_err(ImportError::Storage)?;
                if !done {
                    Stage::Encoding(writing)
                } else {
                    let part = self.part(&mut writing)?;
                    self.stage = Stage::Reading(writing);
                    return Ok(part.map(Produced::Part));
                }
            }
            Stage::Over => {
                return Err(ImportError::Storage(anyhow::anyhow!("the import was over")));
            }
        };
        Ok(None)
    }

    /// Checks the next piece of rows; the stage after it.
    fn check(
        &mut self,
        mut parse: Box<CsvParse<Cursor<Bytes>>>,
        csv: Bytes,
    ) -> Result<Stage, ImportError> {
        if !parse.read_piece(self.piece_bytes)? {
            return Ok(Stage::Checking(parse, csv));
        }
        let bytes = parse.bytes().max(1);
        let (columns, rows) = parse.finish_shape()?;
        // The cells of `piece_bytes` of this file, on average.
        let cells = u128::try_from(rows.saturating_mul(columns.len())).unwrap_or(u128::MAX);
        let per_piece = cells.saturating_mul(self.piece_bytes as u128) / bytes as u128;
        self.piece_cells = usize::try_from(per_piece).unwrap_or(usize::MAX).max(1);
        let empty = vec![StringArray::new_null(0); columns.len()];
        let schema = Conversion::new(columns.clone(), empty)
            .finish()?
            .batch
            .schema();
        let encoder = TableEncoder::new(schema).map_err(ImportError::Storage)?;
        let groups = RowGroups::new(csv, columns.clone(), &self.limits, codec::ROW_GROUP_ROWS)?;
        Ok(Stage::Reading(Box::new(Writing {
            groups,
            encoder,
            columns,
            rows,
        })))
    }

    /// The bytes encoded so far, once they make a part.
    fn part(&self, writing: &mut Writing) -> Result<Option<Vec<u8>>, ImportError> {
        match self.part_bytes {
            Some(part) if writing.encoder.written() >= part => writing
                .encoder
                .take_written()
                .map(Some)
                .map_err(ImportError::Storage),
            _ => Ok(None),
        }
    }

    /// The encoded table and the slot, once every group is encoded.
    fn encoded(&mut self, writing: Writing) -> Result<Produced, ImportError> {
        let content = writing.encoder.finish().map_err(ImportError::Storage)?;
        let slot = self
            .slot
            .take()
            .ok_or_else(|| ImportError::Storage(anyhow::anyhow!("the import lost its slot")))?;
        Ok(Produced::Table(Encoded {
            columns: writing.columns,
            rows: writing.rows,
            content,
            slot,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::outbound::datasource::{codec, import, slots::Slots};

    /// A CSV of every column type, with NULLs, `rows` rows.
    fn csv(rows: usize) -> Vec<u8> {
        let mut out = String::from("\u{feff}id,name,score,ok,day,at,code\n");
        for i in 0..rows {
            let name = if i % 5 == 0 {
                String::new()
            } else {
                format!("name {i}")
            };
            out.push_str(&format!(
                "{i},{name},{}.5,{},2024-01-{:02},2024-01-01 10:00:{:02},0{}\n",
                i % 97,
                i % 2 == 0,
                i % 28 + 1,
                i % 60,
                i % 9
            ));
        }
        out.into_bytes()
    }

    /// Runs `work` to its end; its answer, the parts it handed on before
    /// it, and the pieces it took.
    fn run(work: &mut ImportWork) -> (Result<Encoded, ImportError>, Vec<Vec<u8>>, usize) {
        let (mut pieces, mut parts) = (1, Vec::new());
        loop {
            match work.piece() {
                Turn::Done(Ok(Produced::Part(part))) => parts.push(part),
                Turn::Done(Ok(Produced::Table(encoded))) => return (Ok(encoded), parts, pieces),
                Turn::Done(Err(error)) => return (Err(error), parts, pieces),
                Turn::More => {}
            }
            pieces += 1;
        }
    }

    #[tokio::test]
    async fn an_import_in_pieces_stores_the_same_bytes_as_at_once() {
        let slots = Slots::new(4, 2, 4);
        let limits = ImportLimits::default();
        let csv = csv(3000);
        let parsed = import::parse_csv(&csv, &limits).expect("parses");
        let at_once = codec::encode(&parsed.batch).expect("encodes");
        for piece_bytes in [1, 100, 4096, csv.len()] {
            let slot = slots
                .acquire("org", Duration::from_secs(1))
                .await
                .expect("a slot");
            let work = ImportWork::new(Bytes::from(csv.clone()), limits, piece_bytes, None, slot);
            let (answer, parts, pieces) = run(&mut { work });
            let encoded = answer.expect("imports");
            assert!(parts.is_empty(), "no part size, no parts");
            assert!(encoded.content == at_once, "{piece_bytes} bytes a piece");
            assert_eq!((encoded.rows, &encoded.columns), (3000, &parsed.columns));
            match piece_bytes {
                1 => assert!(pieces > 3000, "a row a piece: {pieces}"),
                100 => assert!(pieces > csv.len() / 100, "{pieces} pieces"),
                _ if piece_bytes == csv.len() => assert_eq!(pieces, 1, "a whole import a turn"),
                _ => assert!(pieces > 1),
            }
        }
    }

    #[tokio::test]
    async fn an_error_in_a_later_piece_is_the_same_error_and_frees_the_slot() {
        let slots = Slots::new(1, 1, 1);
        let mut csv = csv(2000);
        csv.extend_from_slice(b"1,2,3,4,5,6,7,8\n");
        let limits = ImportLimits::default();
        let whole = import::parse_csv(&csv, &limits).expect_err("refused");
        let slot = slots
            .acquire("org", Duration::from_secs(1))
            .await
            .expect("a slot");
        let mut work = ImportWork::new(Bytes::from(csv), limits, 512, Some(1), slot);
        let (answer, parts, pieces) = run(&mut work);
        assert!(
            parts.is_empty(),
            "nothing is encoded before every row is checked"
        );
        let error = answer.expect_err("refused");
        assert_eq!(error.to_string(), whole.to_string());
        assert!(pieces > 10, "{pieces}");
        slots
            .acquire("org", Duration::from_millis(100))
            .await
            .expect("the slot was given back before the work was dropped");
        drop(work);
    }

    #[tokio::test]
    async fn a_large_import_hands_its_table_on_a_row_group_at_a_time() {
        let slots = Slots::new(4, 2, 4);
        let limits = ImportLimits::default();
        let rows = 2 * codec::ROW_GROUP_ROWS + 1000;
        let mut csv = String::from("id,label\n");
        for i in 0..rows {
            csv.push_str(&format!("{i},l{}\n", i % 13));
        }
        let csv = csv.into_bytes();
        let parsed = import::parse_csv(&csv, &limits).expect("parses");
        let at_once = codec::encode(&parsed.batch).expect("encodes");
        drop(parsed);
        let csv = Bytes::from(csv);
        for (piece_bytes, part_bytes) in [(csv.len(), 1), (256 * 1024, 1), (256 * 1024, usize::MAX)]
        {
            let slot = slots
                .acquire("org", Duration::from_secs(1))
                .await
                .expect("a slot");
            let work = ImportWork::new(csv.clone(), limits, piece_bytes, Some(part_bytes), slot);
            let (answer, parts, _) = run(&mut { work });
            let encoded = answer.expect("imports");
            let expected_parts = if part_bytes == 1 { 3 } else { 0 };
            assert_eq!(parts.len(), expected_parts, "a part after each row group");
            let mut stored: Vec<u8> = parts.concat();
            stored.extend_from_slice(&encoded.content);
            assert!(
                stored == at_once,
                "the same file, {piece_bytes} bytes a piece"
            );
            assert_eq!(encoded.rows, rows);
            if part_bytes == 1 {
                assert!(
                    encoded.content.len() < 16 * 1024,
                    "the footer only: {} of {} bytes",
                    encoded.content.len(),
                    at_once.len()
                );
            }
        }
    }
}
