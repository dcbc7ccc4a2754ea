//! The stored form of a table: Parquet bytes.
//!
//! Parquet's dictionary and run-length encodings plus zstd keep typical CSV
//! data several times smaller than the CSV (and than Arrow IPC), which matters
//! because every replica reads the whole table from the database, while
//! decoding stays fast (see BENCHMARKS-data-sources.md).

use anyhow::Context as _;
use bytes::Bytes;
use datafusion::arrow::record_batch::RecordBatch;
use parquet::{
    arrow::{ArrowWriter, arrow_reader::ParquetRecordBatchReaderBuilder},
    basic::{Compression, ZstdLevel},
    file::properties::WriterProperties,
};

/// Rows per decoded batch, DataFusion's default batch size.
pub(super) const BATCH_ROWS: usize = 8192;

/// Encodes `batch` for storage.
pub(super) fn encode(batch: &RecordBatch) -> anyhow::Result<Vec<u8>> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(properties))
        .context("failed to start encoding a table")?;
    writer.write(batch).context("failed to encode a table")?;
    writer
        .into_inner()
        .context("failed to finish encoding a table")
}

/// Decodes stored bytes into batches of [`BATCH_ROWS`] rows.
pub(super) fn decode(content: Vec<u8>) -> anyhow::Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(content))
        .context("stored table is not valid")?
        .with_batch_size(BATCH_ROWS)
        .build()
        .context("failed to read a stored table")?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .context("failed to decode a stored table")
}

#[cfg(test)]
mod format_comparison {
    use std::time::Instant;

    use datafusion::arrow::ipc::{
        CompressionType,
        reader::StreamReader,
        writer::{IpcWriteOptions, StreamWriter},
    };
    use parquet::basic::Compression;

    use super::*;
    use crate::{domain::datasource::ImportLimits, outbound::datasource::import::parse_csv};

    fn csv() -> Vec<u8> {
        let regions = [
            "north", "south", "east", "west", "central", "ne", "sw", "islands",
        ];
        let mut out = String::from("id,region,product,units,price,day\n");
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for id in 1..=1_000_000u64 {
            let r = regions[(next() % 8) as usize];
            let p = next() % 50;
            let u = next() % 100 + 1;
            let c = next() % 100_000 + 99;
            let d = next() % 365;
            out.push_str(&format!(
                "{id},{r},product_{p:02},{u},{}.{:02},2024-{:02}-{:02}\n",
                c / 100,
                c % 100,
                d / 31 + 1,
                d % 28 + 1
            ));
        }
        out.into_bytes()
    }

    #[test]
    #[ignore = "measurement, run by hand in release"]
    fn compare_storage_formats() {
        let csv = csv();
        let t = Instant::now();
        let parsed = parse_csv(&csv, &ImportLimits::default()).expect("parsed");
        eprintln!("csv {} bytes, parse {:?}", csv.len(), t.elapsed());
        let batch = parsed.batch;
        for (name, compression) in [
            (
                "parquet zstd1",
                Compression::ZSTD(ZstdLevel::try_new(1).expect("level")),
            ),
            ("parquet snappy", Compression::SNAPPY),
            ("parquet none", Compression::UNCOMPRESSED),
        ] {
            let t = Instant::now();
            let props = WriterProperties::builder()
                .set_compression(compression)
                .build();
            let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).expect("w");
            w.write(&batch).expect("write");
            let bytes = w.into_inner().expect("close");
            let enc = t.elapsed();
            let len = bytes.len();
            let t = Instant::now();
            let rows: usize = decode(bytes)
                .expect("decode")
                .iter()
                .map(|b| b.num_rows())
                .sum();
            eprintln!(
                "{name}: {len} bytes, encode {enc:?}, decode {:?} ({rows} rows)",
                t.elapsed()
            );
        }
        for (name, compression) in [
            ("ipc zstd", Some(CompressionType::ZSTD)),
            ("ipc lz4", Some(CompressionType::LZ4_FRAME)),
            ("ipc none", None),
        ] {
            let t = Instant::now();
            let options = IpcWriteOptions::default()
                .try_with_compression(compression)
                .expect("o");
            let mut w = StreamWriter::try_new_with_options(Vec::new(), &batch.schema(), options)
                .expect("w");
            for start in (0..batch.num_rows()).step_by(65536) {
                w.write(&batch.slice(start, 65536.min(batch.num_rows() - start)))
                    .expect("write");
            }
            w.finish().expect("finish");
            let bytes = w.into_inner().expect("inner");
            let enc = t.elapsed();
            let len = bytes.len();
            let t = Instant::now();
            let reader = StreamReader::try_new(std::io::Cursor::new(bytes), None).expect("r");
            let rows: usize = reader.map(|b| b.expect("b").num_rows()).sum();
            eprintln!(
                "{name}: {len} bytes, encode {enc:?}, decode {:?} ({rows} rows)",
                t.elapsed()
            );
        }
    }
}
