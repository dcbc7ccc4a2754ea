//! Fairness between organizations: a quiet organization's ExecuteTool latency
//! beside an organization flooding at its rate limit, alone, and while a
//! noisy organization whose MCP server hangs keeps calling at its limit,
//! in one run against one process; then the same noisy neighbour
//! against a server whose per-organization limit is as large as the global
//! one (what every organization had before per-organization limits). The
//! flood runs twice: refusals at the rate held until the next token (the
//! default), and answered at once (`SWITCHBOARD_ORG_RATE_REFUSAL_HOLD=0s`,
//! as before); the server's CPU time per refusal is read from `/proc`.
//! Last, SQL load: another organization importing large CSVs into its data
//! sources in runs-service back to back, while the quiet organization makes
//! small imports there and its ExecuteTool calls (`sql.rs`), twice: with
//! runs-service's data-source threads taking a whole import a turn (as
//! before imports were parsed in pieces), and as by default;
//! `BENCH_SQL_ROWS=all` adds a first row with the threads as before they
//! were a pool of their own (4 at the service's priority). Before them, the
//! machine's floor (`floor.rs`): the quiet calls beside spin loops in the
//! kernel's idle class, what any work on those cores costs them.
//! `BENCH_FAIRNESS=sql` runs only that row, `=calls` all but it.
//! mcp-service and the example MCP server run as release binaries; the
//! hanging MCP server (accepts, never answers) runs in this process. See
//! BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-mcp-service --bench fairness`

#[path = "fairness/floor.rs"]
mod floor;
#[path = "fairness/sql.rs"]
mod sql;

use std::{
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::json;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    bench::{KillOnDrop, quiet_example_http_server},
    grpc::{free_port, wait_serving},
    http_integration_request, token, workspace_binary,
};
use tokio::net::TcpListener;
use tonic::{Code, transport::Channel};

/// Calls the quiet organization makes per phase.
const CALLS: usize = 4000;
/// Concurrent callers of the quiet organization.
const QUIET_CALLERS: usize = 4;
/// The server's global concurrency limit.
const GLOBAL_LIMIT: usize = 256;
/// The per-organization concurrency limit of the fair server.
const ORG_LIMIT: usize = 64;
/// The noisy organization's callers: enough to fill the whole server.
const NOISY_CALLERS: usize = GLOBAL_LIMIT;
/// The flooding organization's rate limit, calls per second.
const FLOOD_RATE: u32 = 100;
/// The flooding organization's callers, each calling again at once when
/// refused.
const FLOOD_CALLERS: usize = 16;

async fn channel(url: &str) -> Channel {
    Channel::from_shared(url.to_owned())
        .expect("a URL")
        .connect()
        .await
        .expect("connects")
}

/// mcp-service as a release binary with `org_limit` calls in flight per
/// organization, refusals at a rate held up to `hold`; its process id.
async fn mcp_service(
    dir: &std::path::Path,
    org_limit: usize,
    hold: &str,
) -> (KillOnDrop, String, u32) {
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    let started = STARTED.fetch_add(1, Ordering::Relaxed);
    let port = free_port().expect("a port");
    let child = Command::new(workspace_binary("switchboard-mcp-service", "mcp-service"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env(
            "SWITCHBOARD_DATA_DIR",
            dir.join(format!("data-{started}-{org_limit}-{hold}")),
        )
        .env("SWITCHBOARD_ORG_RATE_REFUSAL_HOLD", hold)
        .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
        .env("SWITCHBOARD_DEV_MODE", "true")
        .env("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.1/32")
        .env("SWITCHBOARD_CONCURRENCY_LIMIT", GLOBAL_LIMIT.to_string())
        .env("SWITCHBOARD_ORG_CONCURRENCY_LIMIT", org_limit.to_string())
        // Concurrency is measured here; the quiet organization's own rate
        // (thousands of calls a second) must not be what refuses it.
        .env("SWITCHBOARD_ORG_RATE_LIMIT", "1000000")
        .env("SWITCHBOARD_ORG_RATE_BURST", "1000000")
        // Except the flooding organization's.
        .env("SWITCHBOARD_ORG_LIMITS_FILE", limits_file(dir))
        // The hanging calls hang for the whole benchmark.
        .env("SWITCHBOARD_MCP_CONNECT_TIMEOUT", "10m")
        .env("SWITCHBOARD_MCP_CALL_TIMEOUT", "10m")
        .env("RUST_LOG", "warn")
        .env("SWITCHBOARD_LOG_FORMAT", "pretty")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("mcp-service starts");
    let pid = child.id();
    let url = format!("http://127.0.0.1:{port}");
    wait_serving(&url, "", Duration::from_secs(30))
        .await
        .expect("mcp-service serves");
    (KillOnDrop(child), url, pid)
}

/// The CPU time process `pid` has used so far (user and system), from
/// `/proc` (Linux; zero elsewhere), counting 100 ticks a second.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis, the third of
    // which is field 3 of proc(5): utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|field| field.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// The limits file: the flooding organization's own rate.
fn limits_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("limits.toml");
    std::fs::write(
        &path,
        format!("[orgs.flood]\nrate = {FLOOD_RATE}\nburst = {FLOOD_RATE}\n"),
    )
    .expect("the limits file is written");
    path
}

/// An MCP server that accepts connections and never answers.
async fn hanging_upstream() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    url
}

async fn integration(channel: &Channel, token: &str, slug: &str, url: &str) -> String {
    McpServiceClient::new(channel.clone())
        .create_integration(authed(http_integration_request(slug, url), token))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id
}

fn call(id: &str, scope: String, token: &str) -> tonic::Request<pb::ExecuteToolRequest> {
    authed(
        pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: "echo".into(),
            arguments: json_to_struct(&json!({"text": "ping"})),
            session_scope: scope,
            arguments_json: String::new(),
            ..Default::default()
        },
        token,
    )
}

/// The noisy organization: `NOISY_CALLERS` callers on a hanging MCP server,
/// each retrying after the server's RetryInfo delay when refused.
struct Noisy {
    stop: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
}

impl Noisy {
    async fn start(url: &str, upstream: &str) -> Self {
        let token = token("noisy", "noisy-user", &["admin"]);
        // Several connections, so that HTTP/2 stream limits do not cap the
        // noisy organization below the server's limits.
        let mut channels = Vec::new();
        for _ in 0..4 {
            channels.push(channel(url).await);
        }
        let id = integration(&channels[0], &token, "stuck", upstream).await;
        let (stop, refused) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        for n in 0..NOISY_CALLERS {
            let mut client = McpServiceClient::new(channels[n % channels.len()].clone());
            let (id, token, stop, refused) =
                (id.clone(), token.clone(), stop.clone(), refused.clone());
            tokio::spawn(async move {
                let mut attempt = 0;
                while !stop.load(Ordering::Relaxed) {
                    attempt += 1;
                    let request = call(&id, format!("noisy-{n}-{attempt}"), &token);
                    match client.execute_tool(request).await {
                        Err(status) if status.code() == Code::ResourceExhausted => {
                            refused.fetch_add(1, Ordering::Relaxed);
                            let delay = tonic_types::StatusExt::get_error_details(&status)
                                .retry_info()
                                .and_then(|r| r.retry_delay)
                                .unwrap_or(Duration::from_secs(1));
                            tokio::time::sleep(delay).await;
                        }
                        _ => tokio::time::sleep(Duration::from_millis(100)).await,
                    }
                }
            });
        }
        // Time for the hanging calls to take their slots.
        tokio::time::sleep(Duration::from_secs(2)).await;
        Self { stop, refused }
    }
}

impl Drop for Noisy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// An organization flooding at its rate limit: `FLOOD_CALLERS` callers
/// listing integrations back to back, ignoring the retry delay.
struct Flood {
    stop: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
}

impl Flood {
    async fn start(url: &str) -> Self {
        let token = token("flood", "flood-user", &["admin"]);
        let channel = channel(url).await;
        let (stop, refused) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        for _ in 0..FLOOD_CALLERS {
            let mut client = McpServiceClient::new(channel.clone());
            let (token, stop, refused) = (token.clone(), stop.clone(), refused.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let request = authed(pb::ListIntegrationsRequest::default(), &token);
                    if let Err(status) = client.list_integrations(request).await
                        && status.code() == Code::ResourceExhausted
                    {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        Self { stop, refused }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct Phase {
    latencies: Vec<Duration>,
    refused: usize,
}

impl Phase {
    /// The latencies (sorted) and refusals of `workers`, which make about
    /// `calls` calls in all.
    async fn of_workers<W>(workers: impl IntoIterator<Item = W>, calls: usize) -> Phase
    where
        W: Future<Output = Result<(Vec<Duration>, usize), tokio::task::JoinError>>,
    {
        let mut phase = Phase {
            latencies: Vec::with_capacity(calls),
            refused: 0,
        };
        for worker in futures::future::join_all(workers).await {
            let (latencies, refused) = worker.expect("a worker");
            phase.latencies.extend(latencies);
            phase.refused += refused;
        }
        phase.latencies.sort_unstable();
        phase
    }

    fn at(&self, q: f64) -> Duration {
        let n = self.latencies.len();
        if n == 0 {
            return Duration::ZERO;
        }
        self.latencies[((n as f64 * q) as usize).min(n - 1)]
    }
}

/// `CALLS` echo calls of the quiet organization from `QUIET_CALLERS` callers.
async fn quiet_phase(channel: &Channel, id: &str, token: &str) -> Phase {
    let counter = Arc::new(AtomicU64::new(0));
    let workers = (0..QUIET_CALLERS).map(|_| {
        let mut client = McpServiceClient::new(channel.clone());
        let (id, token, counter) = (id.to_owned(), token.to_owned(), counter.clone());
        tokio::spawn(async move {
            let (mut latencies, mut refused) = (Vec::new(), 0);
            for _ in 0..CALLS / QUIET_CALLERS {
                let scope = format!("quiet-{}", counter.fetch_add(1, Ordering::Relaxed) % 16);
                let started = Instant::now();
                match client.execute_tool(call(&id, scope, &token)).await {
                    Ok(response) => {
                        assert!(!response.into_inner().is_error);
                        latencies.push(started.elapsed());
                    }
                    Err(_) => refused += 1,
                }
            }
            (latencies, refused)
        })
    });
    Phase::of_workers(workers, CALLS).await
}

fn report(name: &str, phase: &Phase) {
    report_of(name, phase, CALLS);
}

fn report_of(name: &str, phase: &Phase, calls: usize) {
    println!(
        "{name:<58} p50 {:>7.3} ms   p99 {:>7.3} ms   served {:>4}/{calls}",
        phase.at(0.5).as_secs_f64() * 1e3,
        phase.at(0.99).as_secs_f64() * 1e3,
        phase.latencies.len(),
    );
}

/// The quiet organization's phases alone and beside the SQL load.
struct SqlScenario {
    calls_alone: Phase,
    calls_beside: Phase,
    imports_alone: Phase,
    imports_beside: Phase,
    /// The noisy organization's imports done meanwhile.
    noisy_imports: u64,
}

/// The quiet organization's ExecuteTool calls and small imports alone,
/// then beside an organization importing large CSVs back to back.
async fn sql_scenario(dir: &std::path::Path, quiet_upstream: &str, pool: sql::Pool) -> SqlScenario {
    let (_service, url, _pid) = mcp_service(dir, ORG_LIMIT, "250ms").await;
    let (_runs, runs_url) = sql::runs_service(dir, &url, pool).await;
    let quiet_channel = channel(&url).await;
    let token = token("quiet", "quiet-user", &["admin"]);
    let id = integration(&quiet_channel, &token, "example", quiet_upstream).await;
    let imports = sql::Quiet::new(channel(&runs_url).await).await;
    // Warm the sessions, connections and tables.
    quiet_phase(&quiet_channel, &id, &token).await;
    imports.phase("warm").await;
    let calls_alone = quiet_phase(&quiet_channel, &id, &token).await;
    let imports_alone = imports.phase("alone").await;
    let noisy = sql::Noisy::start(&runs_url).await;
    let before = noisy.done.load(Ordering::Relaxed);
    let calls_beside = quiet_phase(&quiet_channel, &id, &token).await;
    let imports_beside = imports.phase("beside").await;
    let noisy_imports = noisy.done.load(Ordering::Relaxed) - before;
    SqlScenario {
        calls_alone,
        calls_beside,
        imports_alone,
        imports_beside,
        noisy_imports,
    }
}

/// The SQL-load rows: data-source threads by default, with a whole import
/// a turn (as before imports were parsed in pieces; `BENCH_SQL_ROWS=all`
/// also first as before the threads were a pool of their own), then with
/// the default pieces.
async fn sql_rows(dir: &std::path::Path, quiet_upstream: &str) {
    let mut rows = vec![
        (
            "default threads and nice, a whole import a turn",
            sql::Pool::WHOLE_IMPORTS,
        ),
        ("default threads, nice and pieces", sql::Pool::DEFAULT),
    ];
    if std::env::var("BENCH_SQL_ROWS").is_ok_and(|rows| rows == "all") {
        rows.insert(0, ("4 threads at nice 0 (as before)", sql::Pool::AS_BEFORE));
    }
    floor_row(dir, quiet_upstream).await;
    for (name, pool) in rows {
        println!("SQL load, runs-service's data-source threads: {name}");
        report_sql(&sql_scenario(dir, quiet_upstream, pool).await);
        println!();
    }
}

/// The quiet organization's ExecuteTool alone and beside spin loops in the
/// kernel's idle class (`floor.rs`): the least any work on those cores
/// costs it on this machine.
async fn floor_row(dir: &std::path::Path, quiet_upstream: &str) {
    let (_service, url, _pid) = mcp_service(dir, ORG_LIMIT, "250ms").await;
    let channel = channel(&url).await;
    let token = token("quiet", "quiet-user", &["admin"]);
    let id = integration(&channel, &token, "example", quiet_upstream).await;
    quiet_phase(&channel, &id, &token).await;
    let alone = quiet_phase(&channel, &id, &token).await;
    let threads = floor::default_data_source_threads();
    let spinners = floor::Spinners::start(threads);
    let beside = quiet_phase(&channel, &id, &token).await;
    drop(spinners);
    println!("The floor: {threads} spin loop(s) in the kernel's idle class (SCHED_IDLE)");
    report("  quiet ExecuteTool alone", &alone);
    report("  quiet ExecuteTool beside them", &beside);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "added by work of the lowest priority: p50 {:+.3} ms, p99 {:+.3} ms ({:+.0} %)\n",
        ms(beside.at(0.5)) - ms(alone.at(0.5)),
        ms(beside.at(0.99)) - ms(alone.at(0.99)),
        (ms(beside.at(0.99)) / ms(alone.at(0.99)) - 1.0) * 100.0,
    );
}

/// The rows of one SQL-load scenario.
fn report_sql(scenario: &SqlScenario) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    report("  quiet ExecuteTool alone", &scenario.calls_alone);
    report("  quiet ExecuteTool beside it", &scenario.calls_beside);
    report_of(
        "  quiet small imports alone",
        &scenario.imports_alone,
        sql::QUIET_IMPORTS,
    );
    report_of(
        "  quiet small imports beside it",
        &scenario.imports_beside,
        sql::QUIET_IMPORTS,
    );
    println!(
        "  the noisy organization's {}-row imports meanwhile ({} callers): {}",
        sql::NOISY_ROWS,
        sql::NOISY_IMPORTERS,
        scenario.noisy_imports
    );
    for (what, alone, beside) in [
        ("ExecuteTool", &scenario.calls_alone, &scenario.calls_beside),
        (
            "small imports",
            &scenario.imports_alone,
            &scenario.imports_beside,
        ),
    ] {
        println!(
            "added by the SQL load to the quiet {what}: p50 {:+.3} ms, p99 {:+.3} ms ({:+.0} %); {} refused",
            ms(beside.at(0.5)) - ms(alone.at(0.5)),
            ms(beside.at(0.99)) - ms(alone.at(0.99)),
            (ms(beside.at(0.99)) / ms(alone.at(0.99)) - 1.0) * 100.0,
            beside.refused
        );
    }
}

/// The quiet organization beside the flood, alone, then beside the noisy
/// one, on a server whose per-organization limit is `org_limit` and which
/// holds refusals at a rate up to `hold`.
async fn scenario(
    dir: &std::path::Path,
    org_limit: usize,
    hold: &str,
    quiet_upstream: &str,
) -> Scenario {
    let (_service, url, pid) = mcp_service(dir, org_limit, hold).await;
    let quiet_channel = channel(&url).await;
    let token = token("quiet", "quiet-user", &["admin"]);
    let id = integration(&quiet_channel, &token, "example", quiet_upstream).await;
    // Warm the sessions and connections.
    quiet_phase(&quiet_channel, &id, &token).await;
    let flood = Flood::start(&url).await;
    let (cpu, refused_before) = (cpu_time(pid), flood.refused.load(Ordering::Relaxed));
    let flooded = quiet_phase(&quiet_channel, &id, &token).await;
    let flood_cpu = cpu_time(pid) - cpu;
    let flood_refused = flood.refused.load(Ordering::Relaxed) - refused_before;
    drop(flood);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu = cpu_time(pid);
    let alone = quiet_phase(&quiet_channel, &id, &token).await;
    let alone_cpu = cpu_time(pid) - cpu;
    let noisy = Noisy::start(&url, &hanging_upstream().await).await;
    let beside = quiet_phase(&quiet_channel, &id, &token).await;
    let refused = noisy.refused.load(Ordering::Relaxed);
    drop(noisy);
    Scenario {
        alone,
        beside,
        refused,
        flooded,
        flood_refused,
        flood_cpu,
        alone_cpu,
    }
}

/// One server's phases.
struct Scenario {
    alone: Phase,
    beside: Phase,
    refused: u64,
    flooded: Phase,
    flood_refused: u64,
    /// The server's CPU time while the quiet organization called beside
    /// the flood, and alone.
    flood_cpu: Duration,
    alone_cpu: Duration,
}

/// The flood rows of `scenario`, named `name`.
fn report_flood(name: &str, scenario: &Scenario) {
    report(name, &scenario.flooded);
    let extra = scenario.flood_cpu.saturating_sub(scenario.alone_cpu);
    println!(
        "  the flooding organization's calls refused meanwhile: {}; server CPU {:.2} s (alone {:.2} s), {:.1} µs more per refusal",
        scenario.flood_refused,
        scenario.flood_cpu.as_secs_f64(),
        scenario.alone_cpu.as_secs_f64(),
        extra.as_secs_f64() * 1e6 / scenario.flood_refused.max(1) as f64,
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let port = free_port().expect("a port");
    let _upstream = quiet_example_http_server(port)
        .await
        .expect("the example server starts");
    let quiet_upstream = format!("http://127.0.0.1:{port}/mcp");

    let only = std::env::var("BENCH_FAIRNESS").unwrap_or_default();
    if only == "sql" {
        sql_rows(dir.path(), &quiet_upstream).await;
        return;
    }
    println!(
        "ExecuteTool (echo) of a quiet organization, {CALLS} calls from {QUIET_CALLERS} callers per row;\n\
         the noisy organization has {NOISY_CALLERS} callers on an MCP server that never answers,\n\
         each retrying after the RetryInfo delay when refused; global limit {GLOBAL_LIMIT} calls in flight\n"
    );
    let fair = scenario(dir.path(), ORG_LIMIT, "250ms", &quiet_upstream).await;
    report(
        &format!("per-organization limit {ORG_LIMIT}: quiet alone"),
        &fair.alone,
    );
    report(
        &format!("per-organization limit {ORG_LIMIT}: beside the noisy one"),
        &fair.beside,
    );
    println!(
        "  the noisy organization's calls refused RESOURCE_EXHAUSTED meanwhile: {}",
        fair.refused
    );
    report_flood(
        &format!("per-organization limit {ORG_LIMIT}: beside a flood at {FLOOD_RATE}/s"),
        &fair,
    );
    let unheld = scenario(dir.path(), ORG_LIMIT, "0s", &quiet_upstream).await;
    report(
        "refusals answered at once (hold 0s): quiet alone",
        &unheld.alone,
    );
    report_flood(
        "refusals answered at once (hold 0s): beside the flood",
        &unheld,
    );
    let unfair = scenario(dir.path(), GLOBAL_LIMIT, "250ms", &quiet_upstream).await;
    report(
        &format!("per-organization limit {GLOBAL_LIMIT} (= global): quiet alone"),
        &unfair.alone,
    );
    report(
        &format!("per-organization limit {GLOBAL_LIMIT} (= global): beside the noisy one"),
        &unfair.beside,
    );
    println!(
        "  the quiet organization's calls refused meanwhile: {}/{CALLS}",
        unfair.beside.refused
    );
    println!();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (what, alone, phase) in [
        ("the noisy neighbour", &fair.alone, &fair.beside),
        ("the flood", &fair.alone, &fair.flooded),
        (
            "the flood, refusals answered at once",
            &unheld.alone,
            &unheld.flooded,
        ),
    ] {
        println!(
            "added by {what} under per-organization limits: p50 {:+.3} ms, p99 {:+.3} ms ({:+.0} %); {} of {CALLS} quiet calls refused",
            ms(phase.at(0.5)) - ms(alone.at(0.5)),
            ms(phase.at(0.99)) - ms(alone.at(0.99)),
            (ms(phase.at(0.99)) / ms(alone.at(0.99)) - 1.0) * 100.0,
            phase.refused
        );
    }
    if only != "calls" {
        println!();
        sql_rows(dir.path(), &quiet_upstream).await;
    }
}
