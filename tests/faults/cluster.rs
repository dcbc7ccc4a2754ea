//! A PostgreSQL server of the suite's own (initdb in a temporary directory,
//! trust auth on a free loopback port), so a fault can restart it without
//! touching the server other tests use.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context as _, bail};
use switchboard_test_support::grpc::free_port;

/// A running PostgreSQL server, stopped when dropped.
pub struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl Cluster {
    /// Creates and starts a server.
    pub fn start() -> anyhow::Result<Self> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new().prefix("faults-pg").tempdir()?;
        if as_root() {
            // PostgreSQL refuses to run as root: the server's files belong
            // to the postgres user.
            chown_postgres(dir.path())?;
        }
        let cluster = Self {
            bin,
            dir,
            port: free_port()?,
        };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        )?;
        cluster.pg_ctl(&["start", "-w"])?;
        Ok(cluster)
    }

    /// The URL of database `name` (created by [`Cluster::create_database`]).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name`.
    pub fn create_database(&self, name: &str) -> anyhow::Result<()> {
        let port = self.port.to_string();
        self.run(
            "createdb",
            &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", name],
        )
    }

    /// Stops the server as a crash would (no checkpoint, every connection
    /// cut), then starts it again after `down`.
    pub fn crash_and_restart(&self, down: Duration) -> anyhow::Result<()> {
        self.pg_ctl(&["stop", "-m", "immediate", "-w"])?;
        std::thread::sleep(down);
        self.pg_ctl(&["start", "-w"])
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn pg_ctl(&self, args: &[&str]) -> anyhow::Result<()> {
        let data = self.data();
        let log = self.dir.path().join("server.log").display().to_string();
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let mut all = vec!["-D", &data, "-l", &log, "-o", &options];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all)
    }

    fn run(&self, tool: &str, args: &[&str]) -> anyhow::Result<()> {
        let program = self.bin.join(tool);
        let mut command = if as_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&program);
            command
        } else {
            Command::new(&program)
        };
        let output = command
            .args(args)
            .output()
            .with_context(|| format!("running {tool}"))?;
        if !output.status.success() {
            bail!(
                "{tool} {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w"]);
    }
}

/// The directory of PostgreSQL's server programs (initdb, pg_ctl), which
/// Debian keeps off the PATH.
fn bin_dir() -> anyhow::Result<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    found.sort();
    if let Some(bin) = found.pop() {
        return Ok(bin);
    }
    let output = Command::new("pg_config").arg("--bindir").output();
    match output {
        Ok(output) if output.status.success() => Ok(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim(),
        )),
        _ => {
            bail!("PostgreSQL's server programs are not installed (run scripts/ensure-postgres.sh)")
        }
    }
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.starts_with(b"0\n"))
}

fn chown_postgres(dir: &Path) -> anyhow::Result<()> {
    let status = Command::new("chown")
        .args(["postgres:postgres"])
        .arg(dir)
        .status()?;
    if !status.success() {
        bail!("chown of {} failed", dir.display());
    }
    Ok(())
}
