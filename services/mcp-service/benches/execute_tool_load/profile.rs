//! Where mcp-service's time goes under load: a `perf` profile with call
//! graphs and a count of its syscalls, each taken while 16 callers drive
//! ExecuteTool over streamable HTTP.

use std::{
    path::Path as FsPath,
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};

use crate::{
    load::{Path, drive},
    setup::Setup,
};

/// Calls made while each recorder runs.
const PROFILED_CALLS: usize = 40_000;

/// Records `perf.data` and `strace.txt` of mcp-service into `dir`.
pub async fn record(setup: &Setup, dir: &FsPath) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let pid = setup.service.0.id().to_string();
    let perf_data = dir.join("perf.data");
    let perf = Command::new("perf")
        .args([
            "record",
            "-F",
            "499",
            "--call-graph",
            "dwarf,16384",
            "-p",
            &pid,
            "-o",
        ])
        .arg(&perf_data)
        .stdout(Stdio::null())
        .spawn()
        .context("starting perf (perf record)")?;
    // perf attaches to every thread before it samples anything.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let stats = drive(setup, Path::ViaHttp, 16, PROFILED_CALLS).await?;
    stop(perf, "perf")?;
    println!(
        "profiled {PROFILED_CALLS} calls ({:.0}/s under perf) into {}",
        stats.per_second,
        perf_data.display()
    );
    let strace_out = dir.join("strace.txt");
    let strace = Command::new("strace")
        .args(["-c", "-f", "-p", &pid, "-o"])
        .arg(&strace_out)
        .stderr(Stdio::null())
        .spawn()
        .context("starting strace")?;
    // strace attaches to every thread before it counts anything.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    drive(setup, Path::ViaHttp, 16, PROFILED_CALLS / 4).await?;
    stop(strace, "strace")?;
    println!(
        "syscalls of {} calls counted into {}",
        PROFILED_CALLS / 4,
        strace_out.display()
    );
    Ok(())
}

/// Stops a recorder as Ctrl-C would, so it writes what it has.
fn stop(mut child: std::process::Child, name: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    if !status.success() {
        bail!("could not stop {name}");
    }
    child.wait()?;
    Ok(())
}
