//! The Python `mcp-proxy` (PyPI; `scripts/bench-execute-tool.sh` installs
//! the pinned version into `target/bench-venv`) in front of the example
//! server over stdio: it starts the server as its child and serves it over
//! streamable HTTP on `/mcp`. ExecuteTool to a stdio upstream is measured
//! against it in the same rounds.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
};

use anyhow::{Context as _, bail, ensure};
use switchboard_test_support::{
    bench::{KillOnDrop, wait_for_port},
    grpc::free_port,
};

use crate::{
    cpu,
    mcp_session::{McpSession, open_session},
    setup::on_service_cpu,
};

/// The environment variable holding the proxy's executable.
const PROGRAM_VAR: &str = "SWITCHBOARD_BENCH_MCP_PROXY";

/// What installs the proxy and sets [`PROGRAM_VAR`].
const INSTALLED_BY: &str = "run scripts/bench-execute-tool.sh (make bench-execute-tool), which \
                            installs mcp-proxy==0.13.0 into target/bench-venv and sets it";

/// The running proxy and the session the calls join.
#[derive(Debug)]
pub struct PythonProxy {
    /// The MCP session on the proxy's `/mcp`.
    pub session: McpSession,
    /// The proxy's process (the Python interpreter); the stdio example
    /// server is its child, and stops when the proxy's end of its stdin
    /// closes.
    pub process: KillOnDrop,
}

/// The proxy's executable, from [`PROGRAM_VAR`]; an error naming the script
/// that installs it when it is unset (the comparison is the point of the
/// stdio path's figures, so it is never skipped).
pub fn program() -> anyhow::Result<PathBuf> {
    let Some(path) = std::env::var_os(PROGRAM_VAR).filter(|path| !path.is_empty()) else {
        bail!("{PROGRAM_VAR} is not set: {INSTALLED_BY}");
    };
    let path = PathBuf::from(path);
    ensure!(
        path.is_file(),
        "{PROGRAM_VAR}={} is not a file: {INSTALLED_BY}",
        path.display()
    );
    Ok(path)
}

/// Starts `mcp-proxy --host 127.0.0.1 --port PORT --log-level WARNING --
/// EXAMPLE --transport stdio` (the stdio command line of mcp-service's
/// integration; warnings only, as mcp-service runs) and opens a session on
/// it. When [`crate::setup::pinned`], it runs on mcp-service's CPU, as mcp-service would.
pub async fn start(program: &Path, example: &Path) -> anyhow::Result<PythonProxy> {
    let port = free_port()?;
    let child = on_service_cpu(program)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--log-level", "WARNING", "--"])
        .arg(example)
        .args(["--transport", "stdio"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting the Python mcp-proxy {}", program.display()))?;
    let process = KillOnDrop(child);
    wait_for_port(port).await?;
    let session = open_session(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    // Its CPU is counted with its children's: the stdio server must be one.
    let pid = process.0.id();
    ensure!(
        !cpu::children(pid).is_empty(),
        "the Python mcp-proxy (pid {pid}) answered initialize without a child process"
    );
    Ok(PythonProxy { session, process })
}
