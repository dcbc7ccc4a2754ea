//! Hostile use of the metrics, against the mcp-service binary with its
//! Prometheus endpoint on: no name a caller sends becomes a label, so calls
//! with huge or many distinct tool names, and requests to random paths
//! without a token, leave the scrape small and its series unchanged; a tool
//! the server listed is still a label.

use std::{collections::BTreeSet, time::Duration};

use futures::{StreamExt as _, stream};
use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{
    TEST_JWT_SECRET,
    grpc::{ServiceProcess, free_port, start_binary, wait_serving},
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tonic::codegen::Service as _;
use tonic::{codegen::http, transport::Channel};

use crate::support::{admin, http_integration, member, req};

/// A generous bound on waits for something that happens promptly.
const PATIENCE: Duration = Duration::from_secs(60);
/// The size of each huge tool name: half the largest message.
const HUGE_NAME_BYTES: usize = 8 * 1024 * 1024;
/// Distinct made-up tool names called: past the series an instrument keeps.
const MANY_NAMES: usize = 1_000;
/// Requests to random paths, more than the SDK's default series limit.
const RANDOM_PATHS: usize = 2_100;
/// What a scrape of this test's metrics stays under.
const SMALL_SCRAPE_BYTES: usize = 256 * 1024;
/// What the process's peak resident memory stays under: a few of the 8 MiB
/// requests at once, not their names kept.
const PEAK_RSS_LIMIT_BYTES: u64 = 512 * 1024 * 1024;

/// mcp-service as a process of its own (it installs its metrics
/// globally), serving metrics on a port of its own.
struct Service {
    process: ServiceProcess,
    metrics_addr: String,
    client: McpServiceClient<Channel>,
    _dir: tempfile::TempDir,
}

async fn start_service() -> Service {
    let dir = tempfile::tempdir().expect("a temp dir");
    let metrics_addr = format!("127.0.0.1:{}", free_port().expect("a port"));
    let process = start_binary(
        env!("CARGO_BIN_EXE_mcp-service"),
        dir.path(),
        &[
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_DEV_MODE", "true"),
            ("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.0/8"),
            ("SWITCHBOARD_METRICS_ADDR", &metrics_addr),
            ("SWITCHBOARD_ORG_RATE_LIMIT", "100000"),
            ("SWITCHBOARD_ORG_RATE_BURST", "100000"),
            ("RUST_LOG", "warn"),
        ],
    )
    .expect("mcp-service starts");
    wait_serving(&process.url, "", PATIENCE)
        .await
        .expect("serving");
    let client = McpServiceClient::connect(process.url.clone())
        .await
        .expect("connects")
        .max_encoding_message_size(usize::MAX)
        .max_decoding_message_size(usize::MAX);
    Service {
        metrics_addr,
        process,
        client,
        _dir: dir,
    }
}

impl Service {
    /// The body of `GET /metrics`, as Prometheus asks for it.
    async fn scrape(&self) -> String {
        let mut stream = tokio::net::TcpStream::connect(&self.metrics_addr)
            .await
            .expect("the metrics endpoint accepts");
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: metrics\r\n\r\n")
            .await
            .expect("the request is sent");
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .expect("the answer is read");
        let answer = String::from_utf8(answer).expect("UTF-8");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.starts_with("HTTP/1.0 200"), "{head}");
        body.to_owned()
    }

    /// The process's peak resident memory (`VmHWM`), in bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.child.id()))
            .expect("the process's status");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a VmHWM line");
        kib * 1024
    }

    /// An integration of the example server, discovered so that its tools
    /// are known.
    async fn integration(&mut self, upstream: &RunningHttpServer) -> String {
        let created = self
            .client
            .create_integration(req(
                http_integration("example", &upstream.url()),
                &admin("org-a"),
            ))
            .await
            .expect("created")
            .into_inner()
            .integration
            .expect("an integration");
        let discovered = self
            .client
            .discover(req(
                pb::DiscoverRequest {
                    integration_id: created.id.clone(),
                    bypass_cache: true,
                    allowed_tools: None,
                },
                &member("org-a"),
            ))
            .await
            .expect("discovered")
            .into_inner();
        assert!(discovered.tools.iter().any(|t| t.name == "echo"));
        created.id
    }
}

fn execute(id: &str, tool: &str) -> tonic::Request<pb::ExecuteToolRequest> {
    req(
        pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: json_to_struct(&json!({ "text": "hi" })),
            session_scope: "thread".into(),
            ..Default::default()
        },
        &member("org-a"),
    )
}

/// The series of a scrape: each sample's name and labels, without its value.
fn series(scraped: &str) -> BTreeSet<String> {
    scraped
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| line.rsplit_once(' ').map(|(key, _)| key.to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_and_many_tool_names_stay_out_of_the_metrics_and_listed_ones_stay_in() {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("the example server starts");
    let mut service = start_service().await;
    let id = service.integration(&upstream).await;
    service
        .client
        .execute_tool(execute(&id, "echo"))
        .await
        .expect("echo answers");

    for i in 0..8_u8 {
        let huge = format!("{}", char::from(b'a' + i)).repeat(HUGE_NAME_BYTES);
        let answer = service.client.execute_tool(execute(&id, &huge)).await;
        assert!(
            matches!(&answer, Err(status) if status.code() == tonic::Code::InvalidArgument),
            "a name past its bound is refused where it enters: {answer:?}"
        );
        // At the bound the name reaches the server, which does not list it.
        let at_bound = format!("{}", char::from(b'a' + i)).repeat(1024);
        let answer = service.client.execute_tool(execute(&id, &at_bound)).await;
        assert!(
            answer.is_ok(),
            "an unknown tool is the model's to read: {answer:?}"
        );
    }
    let client = service.client.clone();
    stream::iter(0..MANY_NAMES)
        .map(|i| {
            let mut client = client.clone();
            let request = execute(&id, &format!("made-up-tool-{i}"));
            async move { client.execute_tool(request).await.map(|_| ()) }
        })
        .buffer_unordered(16)
        .for_each(|answer| async move { assert!(answer.is_ok(), "{answer:?}") })
        .await;

    let scraped = service.scrape().await;
    let peak = service.peak_rss();
    eprintln!(
        "scrape: {} bytes, {} series; peak RSS: {} MiB",
        scraped.len(),
        series(&scraped).len(),
        peak / (1024 * 1024)
    );
    assert!(
        scraped.len() < SMALL_SCRAPE_BYTES,
        "the scrape holds {} bytes",
        scraped.len()
    );
    assert!(
        !scraped.contains("aaaaaaaaaaaaaaaa"),
        "a huge name is a label"
    );
    assert!(
        !scraped.contains("made-up-tool-"),
        "a made-up name is a label"
    );
    assert!(scraped.contains("gen_ai_tool_name=\"_other\""), "{scraped}");
    assert!(scraped.contains("gen_ai_tool_name=\"echo\""), "{scraped}");
    assert!(
        peak < PEAK_RSS_LIMIT_BYTES,
        "peak RSS {} MiB",
        peak / (1024 * 1024)
    );
}

/// A gRPC request to `path` with no token, as any client reaching the port
/// can send; returns its `grpc-status`.
async fn unauthenticated_call(channel: &mut Channel, url: &str, path: &str) -> Option<String> {
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("{url}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::empty())
        .expect("a request");
    std::future::poll_fn(|cx| channel.poll_ready(cx))
        .await
        .expect("the channel is ready");
    let response = channel.call(request).await.expect("an answer");
    response
        .headers()
        .get("grpc-status")
        .and_then(|status| status.to_str().ok())
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_random_paths_without_a_token_add_no_series() {
    let mut service = start_service().await;
    service
        .client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &admin("org-a")))
        .await
        .expect("ListIntegrations answers");
    let before = series(&service.scrape().await);
    assert!(
        before
            .iter()
            .any(|s| s.contains("rpc_method=\"ListIntegrations\"")),
        "{before:?}"
    );

    let url = service.process.url.clone();
    let channel = Channel::from_shared(url.clone())
        .expect("a URL")
        .connect()
        .await
        .expect("connects");
    let statuses: Vec<Option<String>> = stream::iter(0..RANDOM_PATHS)
        .map(|i| {
            let (mut channel, url) = (channel.clone(), url.clone());
            let path = match i % 3 {
                0 => format!("/random-{i}/call"),
                1 => format!("/switchboard.mcp.v1.McpService/Random{i}"),
                _ => format!("/{}", "p".repeat(i)),
            };
            async move { unauthenticated_call(&mut channel, &url, &path).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(
        statuses.iter().all(|s| s.as_deref() == Some("16")),
        "refused as UNAUTHENTICATED: {:?}",
        statuses.iter().collect::<BTreeSet<_>>()
    );

    let after = series(&service.scrape().await);
    let added: Vec<&String> = after.difference(&before).collect();
    assert!(added.is_empty(), "series added: {added:?}");
}
