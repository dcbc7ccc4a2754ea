//! A SeaweedFS server (an S3-compatible object store) for one test: `weed
//! mini` on loopback ports, with its data in a temporary directory, one
//! bucket and one identity with a test key. The binary is the one
//! `scripts/ensure-seaweedfs.sh` installs into `.tools/bin`; a test that
//! needs it fails (never skips) when it is missing.

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context as _;

/// The test identity's access key id.
pub const ACCESS_KEY_ID: &str = "switchboard-test";
/// The test identity's secret access key.
pub const SECRET_ACCESS_KEY: &str = "switchboard-test-secret";

/// How long the server has to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running SeaweedFS, stopped and removed when dropped.
#[derive(Debug)]
pub struct SeaweedFs {
    /// `http://127.0.0.1:<port>`, its S3 endpoint.
    pub endpoint: String,
    /// The bucket it was started with.
    pub bucket: String,
    /// `http://127.0.0.1:<port>`, its filer's HTTP endpoint, which lists
    /// what the S3 endpoint does not (a bucket's multipart uploads under
    /// way, in `/buckets/<bucket>/.uploads/`).
    pub filer: String,
    child: Child,
    _dir: tempfile::TempDir,
}

/// The `weed` binary: `SWITCHBOARD_WEED`, or the one in the repository's
/// `.tools/bin`.
pub fn weed_binary() -> PathBuf {
    std::env::var_os("SWITCHBOARD_WEED").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../.tools/bin/weed")
                .components()
                .collect()
        },
        PathBuf::from,
    )
}

/// `count` free loopback ports (free when asked; the server binds them
/// right after).
fn free_ports(count: usize) -> anyhow::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()?)
}

/// Writes the S3 identity file of the test key into `dir`; its path.
fn write_identities(dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let config = dir.join("s3.json");
    std::fs::write(
        &config,
        serde_json::json!({
            "identities": [{
                "name": "switchboard-test",
                "credentials": [{"accessKey": ACCESS_KEY_ID, "secretKey": SECRET_ACCESS_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }]
        })
        .to_string(),
    )?;
    Ok(config)
}

impl SeaweedFs {
    /// Starts a server with `bucket`; returns once its S3 port accepts
    /// connections.
    pub fn start(bucket: &str) -> anyhow::Result<Self> {
        let weed = weed_binary();
        anyhow::ensure!(
            weed.is_file(),
            "SeaweedFS is not installed at {}: run scripts/ensure-seaweedfs.sh (make seaweedfs)",
            weed.display()
        );
        let dir = tempfile::tempdir()?;
        let config = write_identities(dir.path())?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data)?;
        let ports = free_ports(10)?;
        let flag = |name: &str, port: u16| format!("-{name}={port}");
        let child = Command::new(&weed)
            .arg("mini")
            .args([
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                "-webdav=false",
                "-admin.ui=false",
                "-master.telemetry=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-s3.iam=false",
                "-master.volumeSizeLimitMB=256",
                "-admin.port.legacy=0",
            ])
            .arg(format!("-dir={}", data.display()))
            .arg(format!("-s3.config={}", config.display()))
            .arg(format!("-bucket={bucket}"))
            .arg(flag("master.port", ports[0]))
            .arg(flag("master.port.grpc", ports[1]))
            .arg(flag("filer.port", ports[2]))
            .arg(flag("filer.port.grpc", ports[3]))
            .arg(flag("volume.port", ports[4]))
            .arg(flag("volume.port.grpc", ports[5]))
            .arg(flag("s3.port", ports[6]))
            .arg(flag("s3.port.grpc", ports[7]))
            // The admin server starts even without its UI.
            .arg(flag("admin.port", ports[8]))
            .arg(flag("admin.port.grpc", ports[9]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("weed.log"))?)
            .spawn()
            .with_context(|| format!("failed to start {}", weed.display()))?;
        let server = Self {
            endpoint: format!("http://127.0.0.1:{}", ports[6]),
            bucket: bucket.to_owned(),
            filer: format!("http://127.0.0.1:{}", ports[2]),
            child,
            _dir: dir,
        };
        server.wait_for_port(ports[6])?;
        Ok(server)
    }

    fn wait_for_port(&self, port: u16) -> anyhow::Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        anyhow::bail!(
            "SeaweedFS did not answer on {addr} within {START_TIMEOUT:?}; its log: {}",
            self.log()
        )
    }

    /// The end of the server's log, to tell why it failed.
    pub fn log(&self) -> String {
        let log = std::fs::read_to_string(self._dir.path().join("weed.log")).unwrap_or_default();
        let start = log.len().saturating_sub(4000);
        log.get(start..).unwrap_or_default().to_owned()
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
