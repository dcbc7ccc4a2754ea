//! ExecuteTool under load from outside: the release mcp-service and the
//! example MCP server run as their own processes; this program is the load
//! generator (a fixed number of callers, each on its own connection). In
//! every round it drives, one after the other, the example server directly
//! over HTTP (MCP `tools/call` on one session), mcp-service's gRPC health
//! check (a gRPC echo), ExecuteTool through mcp-service to the same server
//! over streamable HTTP, HTTPS and stdio, and the Python `mcp-proxy` (PyPI,
//! `SWITCHBOARD_BENCH_MCP_PROXY`, installed by the script) in front of the
//! same server over stdio, at 1 and at 16 callers; the ratios the targets
//! name are taken within each round. See BENCHMARKS.md.
//!
//! `bash scripts/bench-execute-tool.sh` (`make bench-execute-tool`);
//! `SWITCHBOARD_BENCH_PROFILE=<dir>` also records a `perf` profile and a
//! syscall count of mcp-service under load into that directory;
//! `SWITCHBOARD_BENCH_PIN=1` gives mcp-service a CPU of its own.

mod cpu;
mod load;
mod mcp_session;
mod profile;
mod python_proxy;
mod report;
mod setup;

use cpu::Cpu;
use load::{Path, drive};
use report::{Measurement, Round};

/// Rounds, calls per run at 1 caller and at 16, from the environment.
fn settings() -> (usize, usize, usize) {
    let read = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (
        read("SWITCHBOARD_BENCH_ROUNDS", 4),
        read("SWITCHBOARD_BENCH_CALLS_ONE", 3000),
        read("SWITCHBOARD_BENCH_CALLS_MANY", 24000),
    )
}

/// Callers of the two load levels.
const CALLERS: [usize; 2] = [1, 16];

async fn measure(
    setup: &setup::Setup,
    path: Path,
    callers: usize,
    calls: usize,
) -> anyhow::Result<Measurement> {
    let before = Cpu::now(setup);
    let stats = drive(setup, path, callers, calls).await?;
    Ok(Measurement {
        path,
        callers,
        stats,
        cpu: Cpu::now(setup).per_call_since(before, calls),
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (rounds, calls_one, calls_many) = settings();
    let setup = setup::start().await?;
    println!(
        "mcp-service pid {}, example server pid {}, Python mcp-proxy pid {}; {rounds} rounds, \
         {calls_one} calls at 1 caller, {calls_many} at 16{}",
        setup.service.0.id(),
        setup.upstream.0.id(),
        setup.python_proxy.process.0.id(),
        if setup::pinned() {
            "; mcp-service and the Python mcp-proxy (each with its stdio server) on CPU 1, the \
             rest on CPU 0"
        } else {
            ""
        }
    );
    // Warm-up: sessions opened, connections pooled, caches filled.
    for path in Path::ALL {
        drive(&setup, path, 16, 2000).await?;
    }
    let mut all = Vec::new();
    for number in 1..=rounds {
        let mut round = Round::new(number);
        for callers in CALLERS {
            let calls = if callers == 1 { calls_one } else { calls_many };
            for path in Path::ALL {
                let measurement = measure(&setup, path, callers, calls).await?;
                report::line(number, &measurement);
                round.push(measurement);
            }
        }
        round.print_ratios();
        all.push(round);
    }
    report::summary(&all);
    if let Some(dir) = std::env::var("SWITCHBOARD_BENCH_PROFILE")
        .ok()
        .filter(|dir| !dir.is_empty())
    {
        profile::record(&setup, std::path::Path::new(&dir)).await?;
    }
    Ok(())
}
