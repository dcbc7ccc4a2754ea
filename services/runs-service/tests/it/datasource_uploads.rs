//! An import's upload to the store (a real SeaweedFS): the table goes up
//! part by part while the import encodes it, and an import whose caller
//! stops waiting part-way leaves no upload behind.

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

use bytes::Bytes;
use switchboard_runs_service::domain::datasource::DataSources as _;

use crate::datasource_objects::{Fixture, small_limits};

/// A CSV of about `mb` MB whose values barely compress: an id and 40
/// pseudo-random hexadecimal digits a row, so that its Parquet passes an
/// upload part (5 MiB) well before its end.
fn noisy_csv(mb: usize) -> Bytes {
    let mut csv = String::from("id,digest\n");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut id = 0u64;
    while csv.len() < mb * 1_000_000 {
        let _ = write!(csv, "{id},");
        for _ in 0..5 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let _ = write!(csv, "{:08x}", state as u32);
        }
        csv.push('\n');
        id += 1;
    }
    Bytes::from(csv)
}

/// The multipart uploads under way in the fixture's bucket, as its filer
/// lists them.
async fn uploads_under_way(fx: &Fixture) -> usize {
    let url = format!("{}/buckets/{}/.uploads/", fx.server.filer, fx.server.bucket);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let answer = reqwest::Client::new()
        .get(&url)
        .header("accept", "application/json")
        .send()
        .await
        .expect("the filer answers");
    if answer.status() == reqwest::StatusCode::NOT_FOUND {
        return 0;
    }
    let listing: serde_json::Value = answer.json().await.expect("a JSON listing");
    listing["Entries"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn an_import_given_up_during_its_upload_leaves_no_upload_behind() {
    let fx = Fixture::new().await;
    let (import, query) = small_limits();
    let sources = fx.sources(import, query);
    let thread = fx.thread().await;
    let csv = noisy_csv(12);

    // The import runs until the store has its upload under way; then its
    // caller stops waiting.
    let import = sources.import_csv(thread, "noisy.csv", "client", None, csv);
    let started = async {
        while uploads_under_way(&fx).await == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        imported = import => panic!("the import ended before its upload was seen: {imported:?}"),
        () = started => {}
    }

    let deadline = Instant::now() + Duration::from_secs(30);
    while uploads_under_way(&fx).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the given-up upload is still in the store"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(fx.objects().await.is_empty(), "no table was stored");
    assert!(
        sources.list(thread).await.expect("listed").is_empty(),
        "no row was written"
    );
}
