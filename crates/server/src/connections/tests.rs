//! The gRPC listener's connection bounds, over real sockets on loopback.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use switchboard_auth::{Authenticator, Claims, TokenMinter, VerifierConfig};
use tokio::{io::AsyncReadExt as _, net::TcpStream, task::JoinHandle};

use super::{
    ConnectionCaps, FdBudget,
    args::caps_within,
    tracker::{Close, Tracker},
};
use crate::{RunningServer, ServerArgs, Services};

const SECRET: &str = "a-secret-of-enough-length";
/// How long a connection that must stay open is watched.
const HOLDS_FOR: Duration = Duration::from_millis(600);
/// A generous bound on a close that is due.
const PATIENCE: Duration = Duration::from_secs(5);

async fn server(configure: impl FnOnce(&mut ServerArgs)) -> RunningServer {
    let mut args = ServerArgs::for_tests();
    configure(&mut args);
    let authenticator =
        Authenticator::new(&VerifierConfig::hs256(SECRET)).expect("an HS256 verifier");
    crate::spawn(&args, Arc::new(authenticator), Services::new())
        .await
        .expect("the server starts")
}

/// Whether the server closes `tcp` within `within` (end of stream or reset).
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 64];
    loop {
        match tokio::time::timeout(within, tcp.read(&mut byte)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// An HTTP/2 connection to `addr` and the task driving it, which ends when
/// the server closes the connection.
async fn h2(addr: SocketAddr) -> (SendRequest<Full<Bytes>>, JoinHandle<()>) {
    let tcp = TcpStream::connect(addr).await.expect("connects");
    let (send, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("an HTTP/2 handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    (send, driver)
}

/// A gRPC call of `path` with an empty message, its response's headers.
async fn call(
    send: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> http::Response<hyper::body::Incoming> {
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request
        .body(Full::new(Bytes::from_static(&[0, 0, 0, 0, 0])))
        .expect("a request");
    send.send_request(request).await.expect("an answer")
}

fn token(org: &str) -> String {
    TokenMinter::hs256(SECRET)
        .mint(&Claims::new(org, "user", &[], Duration::from_secs(600)))
        .expect("a token")
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_first_request_timeout() {
    let server = server(|a| a.connections.first_request_timeout = Duration::from_millis(300)).await;
    let mut tcp = TcpStream::connect(server.addr).await.expect("connects");
    let started = std::time::Instant::now();
    assert!(
        closed_within(&mut tcp, PATIENCE).await,
        "the silent connection stays open"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_idle_authenticated_connection_is_closed_after_the_idle_timeout() {
    let server = server(|a| {
        a.connections.first_request_timeout = Duration::from_secs(30);
        a.connections.connection_idle_timeout = Duration::from_millis(400);
    })
    .await;
    let (mut send, driver) = h2(server.addr).await;
    let answer = call(
        &mut send,
        server.addr,
        "/test.Nothing/Call",
        Some(&token("org-a")),
    )
    .await;
    assert_eq!(answer.status(), http::StatusCode::OK);
    drop(answer);
    tokio::time::timeout(PATIENCE, driver)
        .await
        .expect("the idle connection is closed")
        .expect("the driver ends");
}

#[tokio::test]
async fn an_open_stream_keeps_a_connection_that_pings_from_idling_out() {
    let server = server(|a| {
        a.connections.first_request_timeout = Duration::from_millis(300);
        a.http2_keepalive_interval = Duration::from_millis(50);
    })
    .await;
    let (mut send, mut driver) = h2(server.addr).await;
    let watch = call(&mut send, server.addr, "/grpc.health.v1.Health/Watch", None).await;
    assert_eq!(watch.status(), http::StatusCode::OK);
    assert!(
        tokio::time::timeout(HOLDS_FOR, &mut driver).await.is_err(),
        "a connection with an open stream is not idle"
    );
    drop(watch);
    tokio::time::timeout(PATIENCE, driver)
        .await
        .expect("once the stream ends the connection idles out, pings or not")
        .expect("the driver ends");
}

#[tokio::test]
async fn at_the_cap_per_ip_a_new_connection_evicts_the_oldest_unauthenticated() {
    let server = server(|a| {
        a.connections.first_request_timeout = Duration::from_secs(30);
        a.connections.max_unauthenticated_connections_per_ip = Some(2);
    })
    .await;
    let mut oldest = TcpStream::connect(server.addr).await.expect("connects");
    let mut second = TcpStream::connect(server.addr).await.expect("connects");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut newest = TcpStream::connect(server.addr).await.expect("connects");
    assert!(
        closed_within(&mut oldest, PATIENCE).await,
        "the oldest is evicted"
    );
    assert!(
        !closed_within(&mut second, HOLDS_FOR).await,
        "the others stay"
    );
    assert!(!closed_within(&mut newest, Duration::from_millis(50)).await);

    // An authenticated connection is not evictable: a flood of silent ones
    // leaves it alone.
    let (mut send, mut driver) = h2(server.addr).await;
    let answer = call(
        &mut send,
        server.addr,
        "/test.Nothing/Call",
        Some(&token("org-a")),
    )
    .await;
    assert_eq!(answer.status(), http::StatusCode::OK);
    let _flood: Vec<TcpStream> = futures::future::join_all(
        (0..5).map(|_| async { TcpStream::connect(server.addr).await.expect("connects") }),
    )
    .await;
    assert!(tokio::time::timeout(HOLDS_FOR, &mut driver).await.is_err());
}

#[tokio::test]
async fn a_header_list_past_its_limit_is_refused_and_one_within_is_served() {
    let server = server(|a| a.connections.http2_max_header_list_bytes = 32 * 1024).await;
    let (mut send, _driver) = h2(server.addr).await;
    let sized = |bytes: usize| {
        http::Request::post(format!(
            "http://{}/grpc.health.v1.Health/Check",
            server.addr
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("x-padding", "a".repeat(bytes))
        .body(Full::new(Bytes::from_static(&[0, 0, 0, 0, 0])))
        .expect("a request")
    };
    let within = send
        .send_request(sized(24 * 1024))
        .await
        .expect("an answer");
    assert_eq!(within.status(), http::StatusCode::OK);
    let past = send.send_request(sized(40 * 1024)).await;
    assert!(
        past.as_ref()
            .map_or(true, |answer| answer.status() != http::StatusCode::OK),
        "{past:?}"
    );
}

fn caps(max: usize, unauthenticated: usize, per_ip: usize, per_org: usize) -> ConnectionCaps {
    ConnectionCaps {
        max_connections: max,
        max_unauthenticated: unauthenticated,
        max_unauthenticated_per_ip: per_ip,
        max_per_org: per_org,
    }
}

#[tokio::test]
async fn the_caps_evict_the_oldest_unauthenticated_and_refuse_only_when_all_authenticated() {
    let tracker = Tracker::new(caps(3, 2, 10, 1));
    let ip = Some([127, 0, 0, 1].into());
    let first = tracker.admit(ip).expect("room");
    let second = tracker.admit(ip).expect("room");
    let third = tracker
        .admit(ip)
        .expect("the oldest unauthenticated is evicted");
    let close = first.closing(Duration::from_secs(60), Duration::from_secs(60));
    let close = tokio::time::timeout(Duration::from_millis(100), close).await;
    assert_eq!(close.ok(), Some(Close::Evicted));
    drop(first);

    second.handle().authenticated("org-a");
    third.handle().authenticated("org-a");
    assert!(second.handle().is_authenticated());
    assert!(
        !third.handle().is_authenticated(),
        "org-a is at its cap of one"
    );
    third.handle().authenticated("org-b");
    assert!(third.handle().is_authenticated());

    let fourth = tracker.admit(ip).expect("the last slot");
    let fifth = tracker
        .admit(ip)
        .expect("at the cap, the unauthenticated fourth is evicted");
    drop(fourth);
    fifth.handle().authenticated("org-c");
    assert!(
        tracker.admit(ip).is_none(),
        "full of authenticated connections: a new one is refused"
    );
}

#[test]
fn caps_not_set_follow_the_ones_set() {
    let budget = FdBudget::of_limit(1024);
    assert_eq!(caps_within(&budget, [None; 4]), budget.caps());
    assert_eq!(
        caps_within(&budget, [Some(100), None, None, Some(7)]),
        caps(100, 50, 12, 7)
    );
}
