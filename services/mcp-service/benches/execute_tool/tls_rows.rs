//! ExecuteTool over mutual TLS against plaintext, side by side in one run:
//! a second mcp-service on the same database serves mutual TLS (as
//! runs-service reaches it in a cluster), and the same calls go to both,
//! alternating at one caller, then from 16 callers each, then on a new
//! connection per call (whose TLS handshake is what a connection costs).

use std::future::Future;

use prost_types::Struct;
use switchboard_mcp_service::Config;
use switchboard_proto::mcp::v1::{self as pb, mcp_service_client::McpServiceClient};
use switchboard_test_support::{authed, otlp::Collector, pki::TestPki};
use tonic::transport::{Channel, Endpoint};

use crate::{drive, interleaved, report, with_cpu};

/// One ExecuteTool call of the echo tool on the benchmark's integration,
/// made again and again.
#[derive(Clone)]
pub struct Caller {
    /// The connection the calls go over.
    pub channel: Channel,
    /// The integration called.
    pub integration_id: String,
    /// The caller's token.
    pub token: String,
    /// The echo tool's arguments.
    pub arguments: Option<Struct>,
}

impl Caller {
    /// One call, on the session every call of the benchmark shares.
    pub fn call(&self) -> impl Future<Output = ()> + Send + use<> {
        let mut client = McpServiceClient::new(self.channel.clone());
        let request = authed(
            pb::ExecuteToolRequest {
                integration_id: self.integration_id.clone(),
                tool_name: "echo".into(),
                arguments: self.arguments.clone(),
                session_scope: "bench".into(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &self.token,
        );
        async move {
            let response = client
                .execute_tool(request)
                .await
                .expect("answered")
                .into_inner();
            assert!(!response.is_error, "{}", response.error_message);
        }
    }

    /// This caller over `channel` instead.
    fn over(&self, channel: Channel) -> Self {
        Self {
            channel,
            ..self.clone()
        }
    }
}

/// Starts mcp-service with `config` serving mutual TLS, and measures
/// `plaintext`'s calls (to the server at `plaintext_url`) against the same
/// calls over it.
pub async fn tls_rows(
    mut config: Config,
    plaintext_url: &str,
    plaintext: &Caller,
    calls: usize,
    collector: Option<&Collector>,
) {
    let pki = TestPki::new("bench CA");
    let cert = pki.server("mcp-service");
    let tls = &mut config.common.server.tls;
    tls.tls_cert_file = Some(cert.cert_file);
    tls.tls_key_file = Some(cert.key_file);
    tls.tls_client_ca_file = Some(pki.ca_file());
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service over TLS starts");
    let client_tls = pki.client_tls(Some(&pki.client(
        "runs-service",
        Some("spiffe://cluster.local/ns/switchboard/sa/runs-service"),
        "runs-service",
    )));
    let endpoint = Channel::from_shared(server.url())
        .expect("url")
        .tls_config(client_tls)
        .expect("a TLS configuration");
    let tls = plaintext.over(endpoint.connect().await.expect("connects over TLS"));
    let (via_plaintext, via_tls) = {
        let (plaintext, tls) = (plaintext.clone(), tls.clone());
        (move || plaintext.call(), move || tls.call())
    };
    drive(4, 400, via_tls.clone()).await; // its session, connections, allocator

    println!("\nExecuteTool over mutual TLS against plaintext, {calls} calls per row");
    let (plain_1, tls_1) = interleaved(calls, via_plaintext.clone(), via_tls.clone()).await;
    report("plaintext, 1 caller", &plain_1);
    report("mutual TLS, 1 caller", &tls_1);
    let plain_16 = with_cpu(
        "plaintext",
        calls,
        collector,
        drive(16, calls, via_plaintext),
    )
    .await;
    report("plaintext, 16 callers", &plain_16);
    let tls_16 = with_cpu("mutual TLS", calls, collector, drive(16, calls, via_tls)).await;
    report("mutual TLS, 16 callers", &tls_16);
    let plain_new = drive(
        1,
        200,
        new_connection(
            plaintext,
            Endpoint::from_shared(plaintext_url.to_owned()).expect("url"),
        ),
    )
    .await;
    report("plaintext, a new connection per call", &plain_new);
    let tls_new = drive(1, 200, new_connection(&tls, endpoint)).await;
    report("mutual TLS, a new connection per call", &tls_new);
    println!(
        "mutual TLS added p50 at 1 caller: {:.3} ms; throughput at 16 callers: {:.0}% of plaintext; a new connection: +{:.3} ms p50",
        (tls_1.p50.as_secs_f64() - plain_1.p50.as_secs_f64()) * 1e3,
        tls_16.per_second / plain_16.per_second * 100.0,
        (tls_new.p50.as_secs_f64() - plain_new.p50.as_secs_f64()) * 1e3,
    );
    server.stop().await.expect("stops");
}

/// `caller`'s call, each on a new connection made from `endpoint`.
fn new_connection(
    caller: &Caller,
    endpoint: Endpoint,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static {
    let caller = caller.clone();
    move || {
        let (caller, endpoint) = (caller.clone(), endpoint.clone());
        Box::pin(async move {
            let channel = endpoint.connect().await.expect("connects");
            caller.over(channel).call().await;
        })
    }
}
