//! What the benchmarks share: the processes they start, and the callers that
//! drive a call many times at once.

use std::{
    future::Future,
    process::{Child, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;

/// A child process, killed and reaped when dropped.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long a started server gets to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The example MCP server serving streamable HTTP on `127.0.0.1:port` with
/// its output discarded, once it accepts connections.
pub async fn quiet_example_http_server(port: u16) -> anyhow::Result<KillOnDrop> {
    let child = crate::example_http_server(port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the example MCP server")?;
    let server = KillOnDrop(child);
    wait_for_port(port).await?;
    Ok(server)
}

/// Waits until something accepts TCP connections on `127.0.0.1:port`.
pub async fn wait_for_port(port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        anyhow::ensure!(
            Instant::now() < deadline,
            "nothing listens on port {port} after {START_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// `calls` calls of `op` from `callers` callers at once (each makes
/// `calls / callers` in turn): every call's latency, and the wall time of
/// them all.
pub async fn drive_callers<F, Fut>(callers: usize, calls: usize, op: F) -> (Vec<Duration>, Duration)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let per_caller = calls / callers.max(1);
    let started = Instant::now();
    let workers: Vec<_> = (0..callers)
        .map(|_| {
            let op = op.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_caller);
                for _ in 0..per_caller {
                    let t = Instant::now();
                    op().await;
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls);
    for worker in workers {
        latencies.extend(worker.await.expect("a caller finishes"));
    }
    (latencies, started.elapsed())
}
