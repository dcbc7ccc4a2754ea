//! Checks every Switchboard server must pass: health, reflection, auth, and
//! the lifecycle of the real binary.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use tokio_stream::StreamExt as _;
use tonic::transport::Channel;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

/// A channel to `url` (`http://host:port`).
pub async fn channel(url: &str) -> anyhow::Result<Channel> {
    Channel::from_shared(url.to_owned())?
        .connect()
        .await
        .with_context(|| format!("failed to connect to {url}"))
}

/// The serving status `url` reports for `service` (`""` for the server).
pub async fn health_status(url: &str, service: &str) -> anyhow::Result<ServingStatus> {
    let response = HealthClient::new(channel(url).await?)
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await?
        .into_inner();
    Ok(response.status())
}

/// The services `url` lists through server reflection (v1).
pub async fn reflected_services(url: &str) -> anyhow::Result<Vec<String>> {
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = ServerReflectionClient::new(channel(url).await?)
        .server_reflection_info(tokio_stream::iter([request]))
        .await?
        .into_inner();
    let response = responses
        .next()
        .await
        .context("reflection closed the stream")??;
    match response.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            Ok(list.service.into_iter().map(|s| s.name).collect())
        }
        other => bail!("unexpected reflection response: {other:?}"),
    }
}

/// An unsigned token (`alg: none`) that names a valid organization and user.
pub fn alg_none_token() -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "sub": "user", "org": "org", "roles": ["admin"],
        "exp": 4_102_444_800u64, "iat": 1_700_000_000u64
    });
    let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{claims}.")
}

/// A service binary started as a child process, killed when dropped.
#[derive(Debug)]
pub struct ServiceProcess {
    /// The child process.
    pub child: Child,
    /// The URL it listens on: `http://`, or `https://` when it serves TLS.
    pub url: String,
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound and released; good enough for tests).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Starts the binary at `path` in the directory `cwd`, on a free loopback
/// port, with `env` added to the environment.
pub fn start_binary(
    path: &str,
    cwd: &std::path::Path,
    env: &[(&str, &str)],
) -> anyhow::Result<ServiceProcess> {
    start_binary_writing_to(path, cwd, env, Stdio::null())
}

/// [`start_binary`], its log lines (stdout) going to `stdout`, for a test
/// that reads what it logged.
pub fn start_binary_writing_to(
    path: &str,
    cwd: &std::path::Path,
    env: &[(&str, &str)],
    stdout: Stdio,
) -> anyhow::Result<ServiceProcess> {
    let port = free_port()?;
    let child = Command::new(path)
        .current_dir(cwd)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env_remove("DATABASE_URL")
        .env_remove("SWITCHBOARD_DATA_DIR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("failed to start {path}"))?;
    Ok(ServiceProcess {
        child,
        url: format!("http://127.0.0.1:{port}"),
    })
}

/// Polls health until `service` is SERVING; returns how long it took.
pub async fn wait_serving(url: &str, service: &str, limit: Duration) -> anyhow::Result<Duration> {
    let start = Instant::now();
    loop {
        if let Ok(ServingStatus::Serving) = health_status(url, service).await {
            return Ok(start.elapsed());
        }
        if start.elapsed() > limit {
            bail!("{service} at {url} was not SERVING within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends SIGTERM to a child process.
pub fn terminate(child: &Child) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    if !status.success() {
        bail!("kill -TERM failed");
    }
    Ok(())
}

/// Watches `service`'s health on `url`, sends SIGTERM to `process`, and
/// checks that NOT_SERVING is reported and the process exits with status 0.
pub async fn check_graceful_stop(
    process: &mut ServiceProcess,
    service: &str,
) -> anyhow::Result<()> {
    let mut watch = HealthClient::new(channel(&process.url).await?)
        .watch(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await?
        .into_inner();
    let first = watch.next().await.context("watch ended")??;
    if first.status() != ServingStatus::Serving {
        bail!("expected SERVING first, got {:?}", first.status());
    }
    terminate(&process.child)?;
    let next = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .context("no health change after SIGTERM")?
        .context("watch ended before NOT_SERVING")??;
    if next.status() != ServingStatus::NotServing {
        bail!(
            "expected NOT_SERVING after SIGTERM, got {:?}",
            next.status()
        );
    }
    // A watcher that saw NOT_SERVING goes away, letting the server drain.
    drop(watch);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = process.child.try_wait()? {
            if !status.success() {
                bail!("the process exited with {status}");
            }
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the process did not exit after SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts the binary at `path` in an empty directory with nothing but a JWT
/// secret and `env` configured, and checks that it reports `service` SERVING
/// and lists it by reflection, and stops cleanly on SIGTERM.
pub async fn check_binary_lifecycle(
    path: &str,
    service: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut vars = vec![
        ("SWITCHBOARD_JWT_SECRET", crate::TEST_JWT_SECRET),
        ("SWITCHBOARD_LOG_FORMAT", "pretty"),
    ];
    vars.extend_from_slice(env);
    let mut process = start_binary(path, dir.path(), &vars)?;
    // How fast it starts is measured by the load benchmark; here only that it
    // does, with room for a machine busy with the rest of the suite.
    wait_serving(&process.url, service, Duration::from_secs(30)).await?;
    let listed = reflected_services(&process.url).await?;
    if !listed.iter().any(|s| s == service) {
        bail!("reflection does not list {service}: {listed:?}");
    }
    check_graceful_stop(&mut process, service).await?;
    if !dir.path().join(".data").is_dir() {
        bail!("the embedded database directory was not created");
    }
    Ok(())
}

/// Calls the unary RPC at `path` (`/package.Service/Method`) with an empty
/// request message, with `authorization` set to `authorization` when given.
/// Any message decodes as empty, so this reaches every RPC's auth check.
pub async fn call_with_authorization(
    url: &str,
    path: &'static str,
    authorization: Option<&str>,
) -> Result<(), tonic::Status> {
    let channel = channel(url)
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut request = tonic::Request::new(());
    if let Some(value) = authorization {
        request.metadata_mut().insert(
            "authorization",
            value
                .parse()
                .map_err(|_| tonic::Status::invalid_argument("bad metadata"))?,
        );
    }
    let codec = tonic_prost::ProstCodec::<(), ()>::default();
    grpc.unary(request, http::uri::PathAndQuery::from_static(path), codec)
        .await
        .map(|_| ())
}

/// Checks that the RPC at `path` refuses a missing token, an expired one, one
/// signed with another secret, an unsigned (`alg: none`) one and a non-bearer
/// scheme with UNAUTHENTICATED (reason `ERROR_REASON_UNAUTHENTICATED`), and lets a valid token through.
pub async fn check_auth_refusals(url: &str, path: &'static str) -> anyhow::Result<()> {
    let wrong_signature = switchboard_auth::TokenMinter::hs256("another-secret-0123456789abcdef")
        .token("org-a", "user-a", &["admin"])?;
    let cases = [
        ("no token", None),
        (
            "expired",
            Some(format!(
                "Bearer {}",
                crate::expired_token("org-a", "user-a")
            )),
        ),
        ("wrong signature", Some(format!("Bearer {wrong_signature}"))),
        ("alg=none", Some(format!("Bearer {}", alg_none_token()))),
        ("basic scheme", Some("Basic dXNlcjpwYXNz".to_owned())),
    ];
    for (case, authorization) in cases {
        match call_with_authorization(url, path, authorization.as_deref()).await {
            Err(status) if status.code() == tonic::Code::Unauthenticated => {
                use tonic_types::StatusExt as _;
                let info = status.get_error_details().error_info().cloned();
                if info
                    .as_ref()
                    .map(|i| (i.reason.as_str(), i.domain.as_str()))
                    != Some(("ERROR_REASON_UNAUTHENTICATED", "switchboard.dev"))
                {
                    bail!("{case}: UNAUTHENTICATED without its ErrorInfo: {info:?}");
                }
            }
            other => bail!("{case}: expected UNAUTHENTICATED, got {other:?}"),
        }
    }
    let valid = format!("Bearer {}", crate::token("org-a", "user-a", &["admin"]));
    if let Err(status) = call_with_authorization(url, path, Some(&valid)).await
        && status.code() == tonic::Code::Unauthenticated
    {
        bail!("a valid token was refused: {status:?}");
    }
    Ok(())
}

/// Checks that `url` reports itself, its liveness and `service` SERVING and
/// lists `service`, health and reflection by reflection.
pub async fn check_health_and_reflection(url: &str, service: &str) -> anyhow::Result<()> {
    for name in ["", "liveness", service] {
        let status = health_status(url, name).await?;
        if status != ServingStatus::Serving {
            bail!("health of `{name}` is {status:?}");
        }
    }
    let services = reflected_services(url).await?;
    for name in [
        service,
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
    ] {
        if !services.iter().any(|s| s == name) {
            bail!("reflection does not list {name}: {services:?}");
        }
    }
    Ok(())
}

/// Runs the binary at `path` as a deployment's migration step
/// (`--migrate-only`) against `database_url`, and checks that it exits with
/// status 0 without serving and that `migrations` migrations are recorded.
pub async fn check_migrate_only(
    path: &str,
    database_url: &str,
    migrations: i64,
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let status = tokio::process::Command::new(path)
        .current_dir(dir.path())
        .arg("--migrate-only")
        .env("DATABASE_URL", database_url)
        .env("SWITCHBOARD_LOG_FORMAT", "pretty")
        // No key of any kind: the migration step needs none.
        .env_remove("SWITCHBOARD_JWT_SECRET")
        .stdin(Stdio::null())
        .status();
    let status = tokio::time::timeout(Duration::from_secs(30), status)
        .await
        .context("the migration step did not exit")??;
    if !status.success() {
        bail!("the migration step exited with {status}");
    }
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database_url).await?;
    let (applied,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM _sqlx_migrations WHERE success = TRUE")
            .fetch_one(&pool)
            .await?;
    pool.close().await;
    if applied != migrations {
        bail!("{applied} migrations recorded, expected {migrations}");
    }
    Ok(())
}
