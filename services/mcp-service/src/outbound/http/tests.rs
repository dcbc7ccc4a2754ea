//! Unit tests of the outbound HTTP client.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// The policy refusal behind a failed request, if that is why it failed.
pub fn policy_error(err: &reqwest::Error) -> Option<&PolicyError> {
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(refusal) = current.downcast_ref::<PolicyError>() {
            return Some(refusal);
        }
        source = current.source();
    }
    None
}

fn install_crypto_provider() {
    // Already installed by another test: fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn client(allow: &str, max_redirects: usize) -> (Arc<AddressPolicy>, reqwest::Client) {
    install_crypto_provider();
    let policy = Arc::new(AddressPolicy::parse_allow_list(allow).expect("allow-list"));
    let options = HttpClientOptions {
        connect_timeout: Duration::from_secs(2),
        max_redirects,
        ..HttpClientOptions::default()
    };
    let client = build_client(Arc::clone(&policy), &options).expect("client builds");
    (policy, client)
}

fn ok_response(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn redirect_response(location: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
}

/// A server on 127.0.0.1 answering every request with `response(port)`;
/// returns its port and a count of the connections it accepted.
async fn serve(response: impl FnOnce(u16) -> String) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let response = Arc::new(response(port));
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let response = Arc::clone(&response);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, accepted)
}

async fn get(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, reqwest::Error> {
    client
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
}

#[tokio::test]
async fn allowed_local_server_is_reachable_through_resolver() {
    let (port, _) = serve(|_| ok_response("hello")).await;
    let (policy, client) = client("127.0.0.0/8, ::1/128", 5);
    let url = format!("http://localhost:{port}/mcp");
    check_request_url(&policy, &url).expect("names pass the pre-send check");
    let response = get(&client, &url).await.expect("allowed");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.expect("body"), "hello");
}

#[tokio::test]
async fn refused_local_server_is_never_dialled_through_resolver() {
    let (port, accepted) = serve(|_| ok_response("secret")).await;
    let (_, client) = client("", 5);
    let err = get(&client, &format!("http://localhost:{port}/"))
        .await
        .expect_err("loopback refused");
    assert!(err.is_connect(), "{err:?}");
    let refusal = policy_error(&err).expect("a policy refusal in the error chain");
    assert!(
        matches!(refusal, PolicyError::Blocked { host, category: "loopback", .. } if host == "localhost"),
        "{refusal:?}"
    );
    assert!(
        refusal.to_string().contains("outbound address policy"),
        "{refusal}"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the server must not be dialled"
    );
}

#[tokio::test]
async fn resolver_refuses_names_with_any_refused_address() {
    let policy = Arc::new(AddressPolicy::default());
    let resolver = PolicyResolver::new(policy);
    let name: Name = "localhost".parse().expect("name");
    let err = match resolver.resolve(name).await {
        Ok(_) => panic!("localhost must be refused"),
        Err(err) => err,
    };
    assert!(err.downcast_ref::<PolicyError>().is_some(), "{err:?}");

    let policy = Arc::new(AddressPolicy::parse_allow_list("127.0.0.0/8 ::1").expect("allow-list"));
    let name: Name = "localhost".parse().expect("name");
    let addrs: Vec<_> = match PolicyResolver::new(policy).resolve(name).await {
        Ok(addrs) => addrs.collect(),
        Err(err) => panic!("localhost must be allowed: {err}"),
    };
    assert!(
        !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()),
        "{addrs:?}"
    );
}

#[tokio::test]
async fn check_request_url_guards_ip_literals() {
    let (port, _) = serve(|_| ok_response("hello")).await;
    let url = format!("http://127.0.0.1:{port}/");
    let (policy, _) = client("", 5);
    let refusal = check_request_url(&policy, &url).expect_err("loopback literal refused");
    assert!(
        matches!(
            refusal,
            PolicyError::Blocked {
                category: "loopback",
                ..
            }
        ),
        "{refusal:?}"
    );
    for url in [
        "http://0x7f000001/",
        "http://[::ffff:127.0.0.1]/",
        "file:///etc/passwd",
    ] {
        assert!(check_request_url(&policy, url).is_err(), "{url}");
    }

    let (policy, client) = client("127.0.0.1", 5);
    check_request_url(&policy, &url).expect("allow-listed literal");
    assert_eq!(get(&client, &url).await.expect("reachable").status(), 200);
}

/// Documents why `check_request_url` is mandatory: reqwest dials IP
/// literals without consulting the resolver. If this starts failing,
/// reqwest began resolving literals and the caller-side check is merely
/// redundant.
#[tokio::test]
async fn ip_literals_bypass_the_resolver() {
    let (port, accepted) = serve(|_| ok_response("hello")).await;
    let (_, client) = client("", 5);
    let response = get(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect("dialled");
    assert_eq!(response.status(), 200);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirect_to_metadata_address_is_refused_not_followed() {
    let (port, accepted) =
        serve(|_| redirect_response("http://169.254.169.254/latest/meta-data/")).await;
    let (_, client) = client("127.0.0.0/8, ::1/128", 5);
    let err = get(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect_err("redirect refused");
    assert!(err.is_redirect(), "{err:?}");
    let refusal = policy_error(&err).expect("a policy refusal in the error chain");
    assert_eq!(
        *refusal,
        PolicyError::Blocked {
            host: "169.254.169.254".to_owned(),
            addr: "169.254.169.254".parse().expect("ip"),
            category: "link-local",
        }
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirect_to_refused_scheme_is_refused() {
    let (port, _) = serve(|_| redirect_response("gopher://127.0.0.1:70/")).await;
    let (_, client) = client("127.0.0.0/8", 5);
    let err = get(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect_err("redirect refused");
    assert!(
        matches!(policy_error(&err), Some(PolicyError::UnsupportedScheme(s)) if s == "gopher"),
        "{err:?}"
    );
}

#[tokio::test]
async fn redirect_to_another_origin_is_refused_before_dialling() {
    let (target, target_accepted) = serve(|_| ok_response("landed")).await;
    let (port, _) = serve(move |_| redirect_response(&format!("http://localhost:{target}/"))).await;
    let (_, client) = client("127.0.0.0/8, ::1/128", 5);
    let err = get(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect_err("another origin refused");
    assert!(err.is_redirect(), "{err:?}");
    let mut source: Option<&(dyn StdError + 'static)> = Some(&err);
    let mut refusal = None;
    while let Some(current) = source {
        refusal = refusal.or(current.downcast_ref::<CrossOriginRedirect>());
        source = current.source();
    }
    let refusal = refusal.expect("a cross-origin refusal in the error chain");
    assert!(
        refusal.to_string().contains(&format!("localhost:{target}")),
        "{refusal}"
    );
    assert_eq!(target_accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn only_the_same_origin_or_an_upgrade_to_https_is_followed() {
    let url = |s: &str| url::Url::parse(s).expect("a URL");
    let stays = |from: &str, to: &str| stays_with_origin(&url(from), &url(to));
    assert!(stays("https://a.example/mcp", "https://a.example/v2/mcp"));
    assert!(stays("http://a.example/mcp", "https://a.example/mcp"));
    assert!(!stays("https://a.example/mcp", "http://a.example/mcp"));
    assert!(!stays("https://a.example/mcp", "https://b.example/mcp"));
    assert!(!stays(
        "https://a.example/mcp",
        "https://a.example:8443/mcp"
    ));
    assert!(!stays("http://a.example:8080/mcp", "https://a.example/mcp"));
    assert!(!stays("https://a.example/mcp", "https://sub.a.example/mcp"));
}

#[tokio::test]
async fn redirect_within_the_origin_is_followed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let response = if request.starts_with(b"GET /done ") {
                    ok_response("landed")
                } else {
                    redirect_response("/done")
                };
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    let (_, client) = client("127.0.0.0/8, ::1/128", 5);
    let response = get(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect("followed");
    assert_eq!(response.status(), 200);
    assert_eq!(response.url().path(), "/done");
    assert_eq!(response.text().await.expect("body"), "landed");
}

#[tokio::test]
async fn redirects_beyond_the_limit_fail() {
    let (port, accepted) =
        serve(|port| redirect_response(&format!("http://127.0.0.1:{port}/again"))).await;
    let (_, client) = client("127.0.0.0/8", 2);
    let err = get(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect_err("loop stops");
    assert!(err.is_redirect(), "{err:?}");
    assert!(policy_error(&err).is_none());
    // The original request plus two followed hops.
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

#[test]
fn a_ca_file_without_a_certificate_is_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").expect("written");
    let error = read_roots(&empty).expect_err("no certificate");
    assert!(
        error.to_string().contains("holds no certificate"),
        "{error:#}"
    );
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
    )
    .expect("written");
    assert!(read_roots(&garbage).is_err());
    assert!(read_roots(&dir.path().join("missing.pem")).is_err());
}

/// A keep-alive server that closes a connection idle for `idle` when the
/// next request arrives on it, unanswered (as a server closing it at that
/// moment does); returns its port and a count of connections accepted.
async fn serve_closing_idle(idle: Duration) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut answered = None::<tokio::time::Instant>;
                let mut buf = [0u8; 1024];
                let mut request = Vec::new();
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                    if !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        continue;
                    }
                    request.clear();
                    if answered.is_some_and(|at| at.elapsed() >= idle) {
                        return;
                    }
                    let body = "ok";
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                    answered = Some(tokio::time::Instant::now());
                }
            });
        }
    });
    (port, accepted)
}

#[tokio::test]
async fn a_connection_idle_past_the_pool_limit_is_not_used_again() {
    install_crypto_provider();
    let server_idle = Duration::from_millis(600);
    let (port, accepted) = serve_closing_idle(server_idle).await;
    let policy = Arc::new(AddressPolicy::parse_allow_list("127.0.0.0/8").expect("allow-list"));
    let options = HttpClientOptions {
        pool_idle_timeout: Duration::from_millis(300),
        ..HttpClientOptions::default()
    };
    let client = build_client(policy, &options).expect("client builds");
    let url = format!("http://127.0.0.1:{port}/");
    assert_eq!(get(&client, &url).await.expect("first").status(), 200);
    // Reused while fresh.
    assert_eq!(get(&client, &url).await.expect("second").status(), 200);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // Idle past both limits: a new connection, not the one being closed.
    tokio::time::sleep(server_idle + Duration::from_millis(300)).await;
    let response = get(&client, &url)
        .await
        .expect("not sent on the connection the server closes");
    assert_eq!(response.status(), 200);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

/// Documents why the pool limit exists: with reqwest's own (90 s), the
/// request goes out on the connection the server is closing, and fails.
#[tokio::test]
async fn a_connection_kept_past_the_servers_idle_limit_fails_the_request() {
    install_crypto_provider();
    let server_idle = Duration::from_millis(300);
    let (port, accepted) = serve_closing_idle(server_idle).await;
    let policy = Arc::new(AddressPolicy::parse_allow_list("127.0.0.0/8").expect("allow-list"));
    let options = HttpClientOptions {
        pool_idle_timeout: Duration::from_secs(90),
        ..HttpClientOptions::default()
    };
    let client = build_client(policy, &options).expect("client builds");
    let url = format!("http://127.0.0.1:{port}/");
    assert_eq!(get(&client, &url).await.expect("first").status(), 200);
    tokio::time::sleep(server_idle + Duration::from_millis(300)).await;
    assert!(get(&client, &url).await.is_err());
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}
