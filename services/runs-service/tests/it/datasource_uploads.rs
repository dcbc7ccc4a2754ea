//! An import's upload to the store (a real SeaweedFS): the table goes up
//! part by part while the import encodes it, and an import whose caller
//! stops waiting part-way leaves no upload behind; and renewing credentials
//! (a container's credentials endpoint, scripted by the test) reach the
//! query's worker, which could not renew them itself.

use std::{
    fmt::Write as _,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use object_store::aws::AmazonS3ConfigKey;
use switchboard_runs_service::domain::datasource::DataSources as _;
use switchboard_test_support::seaweedfs::{ACCESS_KEY_ID, SECRET_ACCESS_KEY};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::datasource_objects::{Fixture, import_and_sum_sales, settings, small_limits};

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

    // An upload whose completion was under way when its caller left is
    // completed, then its object deleted, by the task that runs it: both
    // are gone once that task ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    while uploads_under_way(&fx).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the given-up upload is still in the store"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    while !fx.objects().await.is_empty() {
        assert!(Instant::now() < deadline, "no table was stored");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        sources.list(thread).await.expect("listed").is_empty(),
        "no row was written"
    );
}

#[tokio::test]
async fn an_import_given_up_while_its_row_is_written_leaves_neither_row_nor_object() {
    let fx = Fixture::new().await;
    let (import, query) = small_limits();
    let sources = fx.sources(import, query);
    let thread = fx.thread().await;

    // The table's object is completed while the row's write waits for the
    // database; then the import's caller stops waiting.
    let mut held = fx.hold_writes().await;
    let import = sources.import_csv(
        thread,
        "sales.csv",
        "client",
        None,
        Bytes::from_static(b"region,amount\nnorth,10\nsouth,20\n"),
    );
    let completed = async {
        while fx.objects().await.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        imported = import => panic!("the import ended while the database was held: {imported:?}"),
        () = completed => {}
    }
    sqlx::query("ROLLBACK")
        .execute(&mut *held)
        .await
        .expect("the write lock released");
    drop(held);

    // The row is written once the database is free, and the import then
    // undone: neither its row nor its object is left.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !fx.objects().await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the given-up import's object is still in the store"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        sources.list(thread).await.expect("listed").is_empty(),
        "the given-up import's row is still there"
    );
}

/// A container's credentials endpoint (as EKS Pod Identity serves it): it
/// answers a request that carries `token` with the test identity's keys
/// and a session token, and counts the requests it answered.
async fn credentials_endpoint(token: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!(
        "http://{}/credentials",
        listener.local_addr().expect("bound")
    );
    let answered = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&answered);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            let request = String::from_utf8_lossy(&request).to_ascii_lowercase();
            let (status, body) = if request.contains(&format!("authorization: {token}")) {
                counter.fetch_add(1, Ordering::SeqCst);
                let expiration = chrono::Utc::now() + chrono::Duration::hours(1);
                let body = serde_json::json!({
                    "AccessKeyId": ACCESS_KEY_ID,
                    "SecretAccessKey": SECRET_ACCESS_KEY,
                    "Token": "session-token",
                    "Expiration": expiration.to_rfc3339(),
                });
                ("200 OK", body.to_string())
            } else {
                ("401 Unauthorized", String::new())
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (url, answered)
}

#[tokio::test]
async fn a_query_worker_reads_the_store_with_credentials_the_service_renewed() {
    let fx = Fixture::new().await;
    let token = "pod-identity-token";
    let (url, answered) = credentials_endpoint(token).await;
    let dir = tempfile::tempdir().expect("a directory");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token).expect("written");
    let mut store = settings(&fx.server.endpoint);
    store.access.access_key_id = None;
    store.access.secret_access_key = None;
    store.access.renewing = vec![
        (AmazonS3ConfigKey::ContainerCredentialsFullUri, url),
        (
            AmazonS3ConfigKey::ContainerAuthorizationTokenFile,
            token_file.display().to_string(),
        ),
    ];
    let (import, query) = small_limits();
    let sources = fx.sources_in(&store, import, query);
    let thread = fx.thread().await;
    // Uploaded with the renewed credentials, and read by the worker with
    // the credentials it was handed.
    import_and_sum_sales(&sources, thread).await;
    assert!(
        answered.load(Ordering::SeqCst) >= 1,
        "the credentials came from the endpoint"
    );
}
