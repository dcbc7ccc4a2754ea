//! An import's CPU work as pieces for the pool (`pool.rs`): reading the
//! CSV's rows, about [`Capacity::piece_bytes`] of the file a piece, then
//! typing its columns and encoding the table, about as many cells a piece
//! as such a piece of the file holds. Between pieces the import waits for
//! its organization's next turn, so that another organization's import
//! waits behind at most about one piece of it.

use std::io::Cursor;

use super::{
    encoder::TableEncoder,
    import::{Conversion, CsvParse},
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
    /// The stored bytes.
    pub content: Vec<u8>,
    /// The import's slot, held until the table is stored.
    pub slot: Slot,
}

/// Where an import's work is.
enum Stage {
    /// Not started: the CSV.
    Waiting(Vec<u8>),
    Reading(CsvParse<Cursor<Vec<u8>>>),
    Typing(Conversion),
    Encoding {
        columns: Vec<Column>,
        encoder: Box<TableEncoder>,
    },
    /// Done or failed.
    Over,
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
    slot: Option<Slot>,
}

impl ImportWork {
    /// The work of importing `csv`, in pieces of about `piece_bytes`,
    /// holding `slot` until it ends.
    pub(super) fn new(csv: Vec<u8>, limits: ImportLimits, piece_bytes: usize, slot: Slot) -> Self {
        Self {
            stage: Stage::Waiting(csv),
            limits,
            piece_bytes: piece_bytes.max(1),
            piece_cells: 1,
            slot: Some(slot),
        }
    }

    /// Does the next piece: all of the work when the whole file fits in
    /// one.
    pub(super) fn piece(&mut self) -> Turn<Result<Encoded, ImportError>> {
        let whole = matches!(&self.stage, Stage::Waiting(csv) if csv.len() <= self.piece_bytes);
        let mut step = self.step();
        while whole && matches!(step, Ok(None)) {
            step = self.step();
        }
        match step {
            Ok(None) => Turn::More,
            Ok(Some(encoded)) => Turn::Done(Ok(encoded)),
            Err(error) => {
                self.stage = Stage::Over;
                self.slot = None;
                Turn::Done(Err(error))
            }
        }
    }

    fn step(&mut self) -> Result<Option<Encoded>, ImportError> {
        self.stage = match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Waiting(csv) => {
                let parse = CsvParse::start_owned(csv, &self.limits)?;
                self.read(parse)?
            }
            Stage::Reading(parse) => self.read(parse)?,
            Stage::Typing(mut conversion) => {
                if conversion.convert_piece(self.piece_cells) {
                    let parsed = conversion.finish()?;
                    let encoder =
                        Box::new(TableEncoder::new(parsed.batch).map_err(ImportError::Storage)?);
                    Stage::Encoding {
                        columns: parsed.columns,
                        encoder,
                    }
                } else {
                    Stage::Typing(conversion)
                }
            }
            Stage::Encoding {
                columns,
                mut encoder,
            } => {
                let done = encoder
                    .encode_piece(self.piece_cells)
                    .map_err(ImportError::Storage)?;
                if !done {
                    self.stage = Stage::Encoding { columns, encoder };
                    return Ok(None);
                }
                return self.encoded(columns, encoder).map(Some);
            }
            Stage::Over => {
                return Err(ImportError::Storage(anyhow::anyhow!("the import was over")));
            }
        };
        Ok(None)
    }

    /// Reads the next piece of rows; the stage after it.
    fn read(&mut self, mut parse: CsvParse<Cursor<Vec<u8>>>) -> Result<Stage, ImportError> {
        if !parse.read_piece(self.piece_bytes)? {
            return Ok(Stage::Reading(parse));
        }
        let bytes = parse.bytes().max(1);
        let conversion = parse.finish()?;
        // The cells of `piece_bytes` of this file, on average.
        let cells = u128::try_from(conversion.cells()).unwrap_or(u128::MAX);
        let per_piece = cells.saturating_mul(self.piece_bytes as u128) / bytes as u128;
        self.piece_cells = usize::try_from(per_piece).unwrap_or(usize::MAX).max(1);
        Ok(Stage::Typing(conversion))
    }

    /// The encoded table and the slot, once the last piece is encoded.
    fn encoded(
        &mut self,
        columns: Vec<Column>,
        encoder: Box<TableEncoder>,
    ) -> Result<Encoded, ImportError> {
        let rows = encoder.rows();
        let content = encoder.finish().map_err(ImportError::Storage)?;
        let slot = self
            .slot
            .take()
            .ok_or_else(|| ImportError::Storage(anyhow::anyhow!("the import lost its slot")))?;
        Ok(Encoded {
            columns,
            rows,
            content,
            slot,
        })
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

    /// Runs `work` to its end; its answer and the pieces it took.
    fn run(work: &mut ImportWork) -> (Result<Encoded, ImportError>, usize) {
        let mut pieces = 1;
        loop {
            match work.piece() {
                Turn::Done(answer) => return (answer, pieces),
                Turn::More => pieces += 1,
            }
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
            let (answer, pieces) =
                run(&mut ImportWork::new(csv.clone(), limits, piece_bytes, slot));
            let encoded = answer.expect("imports");
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
        let mut work = ImportWork::new(csv, limits, 512, slot);
        let (answer, pieces) = run(&mut work);
        let error = answer.expect_err("refused");
        assert_eq!(error.to_string(), whole.to_string());
        assert!(pieces > 10, "{pieces}");
        slots
            .acquire("org", Duration::from_millis(100))
            .await
            .expect("the slot was given back before the work was dropped");
        drop(work);
    }
}
