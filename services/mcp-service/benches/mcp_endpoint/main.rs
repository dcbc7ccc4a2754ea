//! The MCP endpoint against the same server directly: the release
//! mcp-service (its endpoint on) and the example MCP server run as their
//! own processes; this program is the load generator, MCP clients each on
//! a connection and a session of their own replaying one recorded
//! `tools/call` (`echo`). Every round drives, one after the other, the
//! example server directly and `/mcp/integrations/bench` with a bearer
//! token, at 1 and at 16 callers, so that both sides of a comparison meet
//! the same noise; the summary takes the median of the rounds. See
//! BENCHMARKS.md.
//!
//! `make bench-mcp-endpoint` (release); `make bench-mcp-endpoint-smoke`, CI's
//! short run of the debug build, checks that it runs. `SWITCHBOARD_BENCH_ROUNDS`,
//! `SWITCHBOARD_BENCH_CALLS_ONE` and `SWITCHBOARD_BENCH_CALLS_MANY` set the
//! rounds and the calls per run.

mod client;
mod setup;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use client::{Client, Target};
use switchboard_test_support::cpu_time;

/// Calls of the warm-up on each side (fewer when a run makes fewer).
const WARM_UP_CALLS: usize = 2000;

/// Callers of the two load levels.
const CALLERS: [usize; 2] = [1, 16];

/// The two sides, in the order each round runs them.
const SIDES: [Side; 2] = [Side::Direct, Side::Endpoint];

/// What is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The example server's `/mcp`.
    Direct,
    /// `/mcp/integrations/bench` of mcp-service, to the same server.
    Endpoint,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Direct => "direct",
            Side::Endpoint => "endpoint",
        }
    }
}

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Stats {
    p50: Duration,
    p99: Duration,
    per_second: f64,
    /// mcp-service's CPU time per call.
    service_cpu: Duration,
}

/// Rounds, calls per run at 1 caller and at 16, from the environment.
fn settings() -> (usize, usize, usize) {
    let read = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(default)
    };
    (
        read("SWITCHBOARD_BENCH_ROUNDS", 5),
        read("SWITCHBOARD_BENCH_CALLS_ONE", 2000),
        read("SWITCHBOARD_BENCH_CALLS_MANY", 16000),
    )
}

/// `calls` calls spread over `clients`, all at once, each client making its
/// share one after the other; the clients are handed back for the next run.
async fn drive(
    clients: Vec<Client>,
    calls: usize,
    service_pid: u32,
) -> anyhow::Result<(Vec<Client>, Stats)> {
    let per_client = calls / clients.len();
    let cpu_before = cpu_time(service_pid);
    let started = Instant::now();
    let workers: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_client);
                for _ in 0..per_client {
                    latencies.push(client.call().await?);
                }
                anyhow::Ok((client, latencies))
            })
        })
        .collect();
    let mut back = Vec::with_capacity(workers.len());
    let mut latencies = Vec::with_capacity(calls);
    for worker in workers {
        let (client, mine) = worker.await.context("a caller panicked")??;
        back.push(client);
        latencies.extend(mine);
    }
    let wall = started.elapsed();
    let service_cpu = cpu_time(service_pid).saturating_sub(cpu_before);
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    let stats = Stats {
        p50: at(0.50),
        p99: at(0.99),
        per_second: latencies.len() as f64 / wall.as_secs_f64(),
        service_cpu: service_cpu / latencies.len().max(1) as u32,
    };
    Ok((back, stats))
}

/// `count` clients of `target`, each with its connection and session.
async fn open(target: &Target, count: usize) -> anyhow::Result<Vec<Client>> {
    let mut clients = Vec::with_capacity(count);
    for _ in 0..count {
        clients.push(Client::open(target).await?);
    }
    Ok(clients)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (rounds, calls_one, calls_many) = settings();
    let setup = setup::start().await?;
    let service_pid = setup.service.0.id();
    println!(
        "mcp-service pid {service_pid}, example server pid {}; {rounds} rounds, \
         {calls_one} calls at 1 caller, {calls_many} at 16",
        setup.upstream.0.id()
    );
    let max_callers = CALLERS[CALLERS.len() - 1];
    // Sessions opened once: the runs measure calls, not session set-up.
    let mut clients = [
        Some(open(&setup.direct, max_callers).await?),
        Some(open(&setup.endpoint, max_callers).await?),
    ];
    // Warm-up: upstream sessions opened, connections pooled, caches filled.
    for (side, slot) in SIDES.iter().zip(clients.iter_mut()) {
        let all = slot.take().context("every side has its clients")?;
        let (all, _) = drive(all, calls_many.min(WARM_UP_CALLS), service_pid)
            .await
            .with_context(|| format!("warming up {}", side.name()))?;
        *slot = Some(all);
    }
    let mut results: Vec<(Side, usize, Stats)> = Vec::new();
    println!("| round | side | callers | calls/s | p50 ms | p99 ms | mcp-service CPU µs/call |");
    println!("|---|---|---|---|---|---|---|");
    for round in 1..=rounds {
        for callers in CALLERS {
            let calls = if callers == 1 { calls_one } else { calls_many };
            for (side, slot) in SIDES.iter().zip(clients.iter_mut()) {
                let mut all = slot.take().context("every side has its clients")?;
                let rest = all.split_off(callers);
                let (mut used, stats) = drive(all, calls, service_pid).await?;
                used.extend(rest);
                *slot = Some(used);
                println!(
                    "| {round} | {} | {callers} | {:.0} | {:.3} | {:.3} | {:.1} |",
                    side.name(),
                    stats.per_second,
                    ms(stats.p50),
                    ms(stats.p99),
                    stats.service_cpu.as_secs_f64() * 1e6,
                );
                results.push((*side, callers, stats));
            }
        }
    }
    summary(&results);
    Ok(())
}

/// The medians over the rounds, side by side, and the endpoint's cost.
fn summary(results: &[(Side, usize, Stats)]) {
    println!();
    println!("median of the rounds:");
    println!("| callers | side | calls/s | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|");
    for callers in CALLERS {
        let mut medians = Vec::new();
        for side in SIDES {
            let runs: Vec<Stats> = results
                .iter()
                .filter(|(s, c, _)| *s == side && *c == callers)
                .map(|(_, _, stats)| *stats)
                .collect();
            let rate = median(runs.iter().map(|s| s.per_second).collect());
            let p50 = median(runs.iter().map(|s| ms(s.p50)).collect());
            let p99 = median(runs.iter().map(|s| ms(s.p99)).collect());
            println!(
                "| {callers} | {} | {rate:.0} | {p50:.3} | {p99:.3} |",
                side.name()
            );
            medians.push((rate, p50));
        }
        let ((direct_rate, direct_p50), (endpoint_rate, endpoint_p50)) = (medians[0], medians[1]);
        println!(
            "| {callers} | endpoint − direct | {:.0}% of direct | +{:.3} | |",
            endpoint_rate / direct_rate * 100.0,
            endpoint_p50 - direct_p50
        );
    }
}
