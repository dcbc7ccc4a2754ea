//! The floor of an MCP-to-MCP gateway on hyper and tokio, the stack of both Switchboard's MCP
//! endpoint and agentgateway: every request is forwarded to one upstream URL as it came (method,
//! body and the headers MCP needs) over a pool of kept-alive connections, and the upstream's
//! answer is streamed back as it comes. Nothing is parsed, checked, recorded or traced, so what
//! this costs per call is what any gateway on this stack pays before doing any work of its own.
//!
//!     switchboard-bench-floor LISTEN_ADDR UPSTREAM_URL

use std::convert::Infallible;
use std::net::SocketAddr;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderName;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Upstream = Client<HttpConnector, Incoming>;
type Answer = Response<BoxBody<Bytes, hyper::Error>>;

/// The request headers an MCP server reads; the rest stay behind.
const FORWARDED: [&str; 5] = [
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(upstream)) = (args.next(), args.next()) else {
        return Err("usage: switchboard-bench-floor LISTEN_ADDR UPSTREAM_URL".into());
    };
    let listen: SocketAddr = listen.parse()?;
    let upstream: Uri = upstream.parse()?;
    let client: Upstream = Client::builder(TokioExecutor::new()).build_http();
    let listener = TcpListener::bind(listen).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (client, upstream) = (client.clone(), upstream.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request| forward(client.clone(), upstream.clone(), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn forward(
    client: Upstream,
    upstream: Uri,
    request: Request<Incoming>,
) -> Result<Answer, Infallible> {
    let (parts, body) = request.into_parts();
    let mut onward = Request::builder().method(parts.method).uri(upstream);
    for name in FORWARDED {
        if let Some(value) = parts.headers.get(HeaderName::from_static(name)) {
            onward = onward.header(name, value);
        }
    }
    let answer = match onward.body(body) {
        Ok(onward) => client.request(onward).await,
        Err(error) => return Ok(failure(error.to_string())),
    };
    Ok(match answer {
        Ok(answer) => answer.map(BodyExt::boxed),
        Err(error) => failure(error.to_string()),
    })
}

fn failure(message: String) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from(message)).map_err(|never| match never {}).boxed());
    *answer.status_mut() = StatusCode::BAD_GATEWAY;
    answer
}
