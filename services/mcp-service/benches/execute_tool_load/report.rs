//! Printing the runs and the ratios the targets name, each taken within one
//! round (the machine is shared: only figures measured side by side compare).

use std::time::Duration;

use crate::{
    cpu::Cpu,
    load::{Path, Stats},
};

/// One run: a path at a number of callers.
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    pub path: Path,
    pub callers: usize,
    pub stats: Stats,
    /// Each process's CPU time per call over the run.
    pub cpu: Cpu,
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
    let c = m.cpu;
    let cpu = match m.path {
        Path::Direct => format!("upstream CPU {:.3} ms/call", ms(c.upstream)),
        // The same upstream process as the direct calls.
        Path::ViaHttp => format!(
            "mcp-service CPU {:.3} ms/call, upstream {:.3}",
            ms(c.service),
            ms(c.upstream)
        ),
        // Each stdio path with the stdio server its front process started.
        Path::ViaStdio => format!(
            "mcp-service CPU {:.3} ms/call, its stdio server {:.3}",
            ms(c.service),
            ms(c.service_stdio)
        ),
        Path::PythonProxyStdio => format!(
            "mcp-proxy CPU {:.3} ms/call, its stdio server {:.3}",
            ms(c.proxy),
            ms(c.proxy_stdio)
        ),
        _ => format!("mcp-service CPU {:.3} ms/call", ms(c.service)),
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
    /// Through mcp-service over stdio, in multiples of the Python mcp-proxy's
    /// calls/s in front of the same server, 1 caller.
    pub over_proxy_one: f64,
    /// The same at 16 callers.
    pub over_proxy_many: f64,
    /// mcp-service's CPU per call over stdio at 16 callers with the stdio
    /// server it started, in ms.
    pub cpu_stdio_whole: f64,
    /// The Python mcp-proxy's CPU per call at 16 callers with the stdio
    /// server it started, in ms.
    pub cpu_proxy_whole: f64,
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
        let (stdio, proxy) = (
            self.get(Path::ViaStdio, 16).cpu,
            self.get(Path::PythonProxyStdio, 16).cpu,
        );
        Ratios {
            http_share: rate(Path::ViaHttp, 16) / rate(Path::Direct, 16),
            stdio_share: rate(Path::ViaStdio, 16) / rate(Path::Direct, 16),
            added_p50: p50(Path::ViaHttp) - p50(Path::GrpcEcho) - p50(Path::Direct),
            http_share_one: rate(Path::ViaHttp, 1) / rate(Path::Direct, 1),
            cpu_http: ms(self.get(Path::ViaHttp, 16).cpu.service),
            cpu_stdio: ms(stdio.service),
            over_proxy_one: rate(Path::ViaStdio, 1) / rate(Path::PythonProxyStdio, 1),
            over_proxy_many: rate(Path::ViaStdio, 16) / rate(Path::PythonProxyStdio, 16),
            cpu_stdio_whole: ms(stdio.service + stdio.service_stdio),
            cpu_proxy_whole: ms(proxy.proxy + proxy.proxy_stdio),
        }
    }

    pub fn print_ratios(&self) {
        let r = self.ratios();
        println!(
            "round {}: 16 callers: HTTP {:.0} % of direct (target ≥ 60 %), stdio {:.0} % \
             (target ≥ 85 %); 1 caller: HTTP {:.0} % of direct, p50 {:+.3} ms over gRPC echo + \
             direct (target ≤ 0.1 ms); mcp-service CPU/call at 16: HTTP {:.3} ms, stdio {:.3} ms",
            self.number,
            r.http_share * 100.0,
            r.stdio_share * 100.0,
            r.http_share_one * 100.0,
            r.added_p50,
            r.cpu_http,
            r.cpu_stdio,
        );
        println!(
            "round {}: stdio through mcp-service {:.1}× the calls/s of the Python mcp-proxy in \
             front of the same server at 1 caller (target ≥ 10×), {:.1}× at 16; CPU/call at 16 \
             with the stdio server: mcp-service {:.3} ms, Python mcp-proxy {:.3} ms\n",
            self.number, r.over_proxy_one, r.over_proxy_many, r.cpu_stdio_whole, r.cpu_proxy_whole,
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
    row(
        "stdio through mcp-service, × Python mcp-proxy → stdio calls/s, 1 caller",
        &|r| format!("{:.1}×", r.over_proxy_one),
        "≥ 10×",
    );
    row(
        "stdio through mcp-service, × Python mcp-proxy → stdio calls/s, 16 callers",
        &|r| format!("{:.1}×", r.over_proxy_many),
        "—",
    );
    row(
        "CPU per call with the stdio server, mcp-service / Python mcp-proxy, 16 callers",
        &|r| format!("{:.3} / {:.3} ms", r.cpu_stdio_whole, r.cpu_proxy_whole),
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
