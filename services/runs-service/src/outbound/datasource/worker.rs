//! Runs a query in a process of its own: `runs-service query-worker`.
//!
//! A function that builds a whole batch in one call never reaches an await
//! point, so no timer or cancellation inside the service can stop it, and
//! what it allocates is the service's memory. In a process of its own the
//! query has a memory ceiling the kernel enforces (`RLIMIT_DATA`, set by the
//! worker on itself before it reads the tables), and when its time is up or
//! its caller goes away the process is killed and reaped; only then is the
//! query's slot given back. The worker starts with an empty environment, so
//! it holds none of the service's secrets.

use std::{
    future::Future,
    os::unix::process::ExitStatusExt as _,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use anyhow::Context as _;
use bytes::Bytes;
use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _},
    process::{Child, Command},
};

use super::protocol::{self, Request, Response};
use crate::domain::datasource::{QueryError, QueryLimits, QueryResult};

/// The hidden subcommand of the runs-service binary that runs one query.
pub const WORKER_SUBCOMMAND: &str = "query-worker";

/// The binary that holds the subcommand.
const BINARY: &str = "runs-service";

/// Time a worker has past the query's own limit to start, answer and exit
/// (it stops the query itself at the limit) before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// Most bytes of a worker's stderr kept to tell why it failed.
const MAX_STDERR_BYTES: usize = 8 * 1024;

/// The program that runs queries.
#[derive(Debug, Clone)]
pub(super) struct QueryWorker {
    program: PathBuf,
}

impl QueryWorker {
    /// The worker `program` (a runs-service binary).
    pub fn new(program: PathBuf) -> Self {
        Self { program }
    }

    /// The runs-service binary running now, or one next to the running
    /// program (a test or benchmark of this crate, which cargo builds next
    /// to the binaries).
    pub fn beside_current() -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("failed to find the running program")?;
        if exe.file_name().is_some_and(|name| name == BINARY) {
            return Ok(Self::new(exe));
        }
        exe.ancestors()
            .skip(1)
            .take(2)
            .map(|dir| dir.join(BINARY))
            .find(|candidate| candidate.is_file())
            .map(Self::new)
            .with_context(|| {
                format!(
                    "no {BINARY} binary next to {}; set SWITCHBOARD_DATA_SOURCE_QUERY_WORKER",
                    exe.display()
                )
            })
    }

    /// Runs `request` over `tables` in a new worker process labelled
    /// `label` (shown in process listings). Returns once the process has
    /// ended: it answered, or it was killed because its time was up or
    /// `cancelled` completed.
    pub async fn run(
        &self,
        label: &str,
        request: &Request,
        tables: &[Bytes],
        limits: &QueryLimits,
        cancelled: impl Future<Output = ()>,
    ) -> Result<QueryResult, QueryError> {
        let mut child = spawn(&self.program, label).map_err(QueryError::Internal)?;
        let exchange = exchange(&mut child, request, tables, limits);
        let finished = tokio::select! {
            finished = tokio::time::timeout(limits.timeout + GRACE, exchange) => finished.ok(),
            () = cancelled => None,
        };
        match finished {
            Some((status, stdout, stderr)) => outcome(status, &stdout, &stderr, limits),
            None => {
                // Sends SIGKILL and waits until the process is reaped.
                if let Err(error) = child.kill().await {
                    tracing::warn!(error = %error, "failed to kill a query worker");
                }
                Err(QueryError::Timeout(limits.timeout))
            }
        }
    }
}

fn spawn(program: &Path, label: &str) -> anyhow::Result<Child> {
    Command::new(program)
        .arg(WORKER_SUBCOMMAND)
        .arg(label)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("failed to start the query worker {}", program.display()))
}

/// Writes the request, reads the answer and waits for the process to end.
async fn exchange(
    child: &mut Child,
    request: &Request,
    tables: &[Bytes],
    limits: &QueryLimits,
) -> (std::io::Result<ExitStatus>, Vec<u8>, Vec<u8>) {
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let write = async move {
        let Some(mut stdin) = stdin else {
            return;
        };
        let Ok(mut header) = serde_json::to_vec(request) else {
            return;
        };
        header.push(b'\n');
        // A worker that fails early stops reading; what it says matters.
        if stdin.write_all(&header).await.is_err() {
            return;
        }
        for table in tables {
            if stdin.write_all(table).await.is_err() {
                return;
            }
        }
        let _ = stdin.shutdown().await;
    };
    let (_, stdout, stderr) = tokio::join!(
        write,
        read_at_most(stdout, protocol::max_response_bytes(limits)),
        read_at_most(stderr, MAX_STDERR_BYTES),
    );
    (child.wait().await, stdout, stderr)
}

/// At most `limit + 1` bytes of `reader` (one more tells it was longer).
async fn read_at_most(reader: Option<impl AsyncRead + Unpin>, limit: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(reader) = reader {
        let _ = reader
            .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
            .read_to_end(&mut bytes)
            .await;
    }
    bytes
}

/// What the worker's exit and output mean for the query.
fn outcome(
    status: std::io::Result<ExitStatus>,
    stdout: &[u8],
    stderr: &[u8],
    limits: &QueryLimits,
) -> Result<QueryResult, QueryError> {
    let status = status
        .context("failed to wait for the query worker")
        .map_err(QueryError::Internal)?;
    if status.success() && stdout.len() <= protocol::max_response_bytes(limits) {
        return serde_json::from_slice::<Response>(stdout)
            .context("the query worker's answer is not valid")
            .map_err(QueryError::Internal)?
            .into_outcome(limits);
    }
    if ran_out_of_memory(stderr) {
        return Err(QueryError::OutOfMemory {
            limit_bytes: limits.process_memory_bytes,
        });
    }
    tracing::warn!(
        status = %status,
        signal = status.signal(),
        answer_bytes = stdout.len(),
        "query worker failed"
    );
    Err(QueryError::Internal(anyhow::anyhow!(
        "the query worker ended with {status}"
    )))
}

/// Whether the worker's last words are an allocation that failed at its
/// memory ceiling (the allocator's message, or a thread without a stack).
fn ran_out_of_memory(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr);
    [
        "memory allocation of",
        "Cannot allocate memory",
        "out of memory",
    ]
    .iter()
    .any(|sign| text.contains(sign))
}
