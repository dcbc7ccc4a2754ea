//! Printing the runs and the ratios the targets name, each taken within one
//! round (the machine is shared: only figures measured side by side compare).

use std::time::Duration;

use crate::load::{Path, Stats};

/// One run: a path at a number of callers.
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    pub path: Path,
    pub callers: usize,
    pub stats: Stats,
    /// mcp-service's CPU time per call over the run.
    pub service_cpu: Duration,
    /// The example server's (HTTP process) CPU time per call over the run.
    pub upstream_cpu: Duration,
}

/// The runs of one round.
#[derive(Debug)]
pub struct Round {
    number: usize,
    runs: Vec<Measurement>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Prints one run.
pub fn line(round: usize, m: &Measurement) {
    let cpu = match m.path {
        Path::Direct => format!("upstream CPU {:.3} ms/call", ms(m.upstream_cpu)),
        // The same upstream process as the direct calls.
        Path::ViaHttp => format!(
            "mcp-service CPU {:.3} ms/call, upstream {:.3}",
            ms(m.service_cpu),
            ms(m.upstream_cpu)
        ),
        _ => format!("mcp-service CPU {:.3} ms/call", ms(m.service_cpu)),
    };
    println!(
        "round {round}  {:>2} callers  {:<31} p50 {:>6.3} ms  p99 {:>6.3} ms  {:>7.0} calls/s  {cpu}",
        m.callers,
        m.path.name(),
        ms(m.stats.p50),
        ms(m.stats.p99),
        m.stats.per_second,
    );
}

/// The ratios of one round.
#[derive(Debug, Clone, Copy)]
pub struct Ratios {
    /// Through mcp-service over HTTP, as a share of direct calls/s, 16 callers.
    pub http_share: f64,
    /// Through mcp-service over stdio, as a share of direct calls/s, 16 callers.
    pub stdio_share: f64,
    /// p50 through mcp-service over HTTP minus (gRPC echo + direct), 1 caller.
    pub added_p50: f64,
    /// Through mcp-service over HTTP, as a share of direct calls/s, 1 caller.
    pub http_share_one: f64,
    /// mcp-service's CPU per call over HTTP at 16 callers, in ms.
    pub cpu_http: f64,
    /// mcp-service's CPU per call over stdio at 16 callers, in ms.
    pub cpu_stdio: f64,
}

impl Round {
    pub fn new(number: usize) -> Self {
        Self {
            number,
            runs: Vec::new(),
        }
    }

    pub fn push(&mut self, measurement: Measurement) {
        self.runs.push(measurement);
    }

    fn get(&self, path: Path, callers: usize) -> Measurement {
        *self
            .runs
            .iter()
            .find(|m| m.path == path && m.callers == callers)
            .expect("every round runs every path at every load")
    }

    pub fn ratios(&self) -> Ratios {
        let rate = |path, callers| self.get(path, callers).stats.per_second;
        let p50 = |path| ms(self.get(path, 1).stats.p50);
        Ratios {
            http_share: rate(Path::ViaHttp, 16) / rate(Path::Direct, 16),
            stdio_share: rate(Path::ViaStdio, 16) / rate(Path::Direct, 16),
            added_p50: p50(Path::ViaHttp) - p50(Path::GrpcEcho) - p50(Path::Direct),
            http_share_one: rate(Path::ViaHttp, 1) / rate(Path::Direct, 1),
            cpu_http: ms(self.get(Path::ViaHttp, 16).service_cpu),
            cpu_stdio: ms(self.get(Path::ViaStdio, 16).service_cpu),
        }
    }

    pub fn print_ratios(&self) {
        let r = self.ratios();
        println!(
            "round {}: 16 callers: HTTP {:.0} % of direct (target ≥ 60 %), stdio {:.0} % \
             (target ≥ 85 %); 1 caller: HTTP {:.0} % of direct, p50 {:+.3} ms over gRPC echo + \
             direct (target ≤ 0.1 ms); mcp-service CPU/call at 16: HTTP {:.3} ms, stdio {:.3} ms\n",
            self.number,
            r.http_share * 100.0,
            r.stdio_share * 100.0,
            r.http_share_one * 100.0,
            r.added_p50,
            r.cpu_http,
            r.cpu_stdio,
        );
    }
}

/// The runs of every round as a table (Markdown), then the ratios per round.
pub fn summary(rounds: &[Round]) {
    println!("| path | callers | {} |", columns(rounds, "round"));
    println!("| --- | --- |{}", " --- |".repeat(rounds.len()));
    for callers in crate::CALLERS {
        for path in Path::ALL {
            let cells: Vec<String> = rounds
                .iter()
                .map(|r| {
                    let m = r.get(path, callers);
                    format!("{:.0}/s, p50 {:.3} ms", m.stats.per_second, ms(m.stats.p50))
                })
                .collect();
            println!("| {} | {callers} | {} |", path.name(), cells.join(" | "));
        }
    }
    println!();
    println!("| measure | {} | target |", columns(rounds, "round"));
    println!("| --- |{} --- |", " --- |".repeat(rounds.len()));
    let row = |name: &str, value: &dyn Fn(Ratios) -> String, target: &str| {
        let cells: Vec<String> = rounds.iter().map(|r| value(r.ratios())).collect();
        println!("| {name} | {} | {target} |", cells.join(" | "));
    };
    row(
        "HTTP through mcp-service, % of direct, 16 callers",
        &|r| format!("{:.0} %", r.http_share * 100.0),
        "≥ 60 %",
    );
    row(
        "stdio through mcp-service, % of direct HTTP, 16 callers",
        &|r| format!("{:.0} %", r.stdio_share * 100.0),
        "≥ 85 %",
    );
    row(
        "p50 over gRPC echo + direct, 1 caller",
        &|r| format!("{:+.3} ms", r.added_p50),
        "≤ 0.1 ms",
    );
    row(
        "HTTP through mcp-service, % of direct, 1 caller",
        &|r| format!("{:.0} %", r.http_share_one * 100.0),
        "—",
    );
    row(
        "mcp-service CPU per call, HTTP / stdio, 16 callers",
        &|r| format!("{:.3} / {:.3} ms", r.cpu_http, r.cpu_stdio),
        "—",
    );
}

fn columns(rounds: &[Round], word: &str) -> String {
    rounds
        .iter()
        .map(|r| format!("{word} {}", r.number))
        .collect::<Vec<_>>()
        .join(" | ")
}
