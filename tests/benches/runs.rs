//! runs-service under load: orchestration overhead per step, 500 concurrent
//! runs with runs-service's peak RSS, and discovery of 20 slow integrations.
//! mcp-service, runs-service, the scripted model and the fast example MCP
//! server each run as their own process, so the model call and ExecuteTool
//! measured alone cross processes as they do from runs-service; only the
//! slow discovery server runs in this one. See BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-e2e --bench runs`

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    mcp::v1::{self as mcp, mcp_service_client::McpServiceClient},
    runs::v1::{self as runs, execute_run_response::Event, runs_service_client::RunsServiceClient},
};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    bench::{KillOnDrop, wait_for_port},
    cpu_time, example_http_server,
    grpc::{free_port, wait_serving},
    http_integration_request, token, workspace_binary,
};
use tonic::transport::Channel;

/// Tool steps of a long run, before the step that answers.
const LONG_TOOL_STEPS: usize = 10;
/// 2-step runs measured; half as many long runs alternate with them.
const ROUNDS: usize = 200;

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn start(
    binary: &str,
    package: &str,
    dir: &std::path::Path,
    env: &[(&str, String)],
) -> (KillOnDrop, String) {
    let port = free_port().expect("a port");
    let child = Command::new(workspace_binary(package, binary))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
        .env("RUST_LOG", "warn")
        .env("SWITCHBOARD_LOG_FORMAT", "pretty")
        // One organization makes every call here, 500 runs at once: it may
        // use the whole server.
        .env("SWITCHBOARD_ORG_CONCURRENCY_LIMIT", "1024")
        .env("SWITCHBOARD_ORG_RATE_LIMIT", "1000000")
        .env("SWITCHBOARD_ORG_RATE_BURST", "1000000")
        .env("SWITCHBOARD_MAX_RUNS_PER_ORG", "1024")
        .env("SWITCHBOARD_MAX_RUNS_PER_USER", "1024")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .envs(
            COLLECTOR
                .get()
                .map(|endpoint| ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())),
        )
        .stdout(service_log())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the service starts");
    (KillOnDrop(child), format!("http://127.0.0.1:{port}"))
}

/// Where a service writes its log lines (stdout): nowhere, unless
/// `BENCH_SERVICE_LOGS=on` asks for them on the benchmark's own stdout.
fn service_log() -> Stdio {
    if std::env::var("BENCH_SERVICE_LOGS").as_deref() == Ok("on") {
        Stdio::inherit()
    } else {
        Stdio::null()
    }
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn integration(
    client: &mut McpServiceClient<Channel>,
    admin: &str,
    slug: &str,
    url: &str,
) -> String {
    client
        .create_integration(authed(http_integration_request(slug, url), admin))
        .await
        .expect("integration")
        .into_inner()
        .integration
        .expect("an integration")
        .id
}

async fn agent(
    client: &mut RunsServiceClient<Channel>,
    admin: &str,
    provider: &str,
    integrations: Vec<String>,
) -> String {
    client
        .create_agent(authed(
            runs::CreateAgentRequest {
                agent: Some(runs::Agent {
                    name: "bench".into(),
                    model: Some(runs::ModelRef {
                        provider: provider.into(),
                        model: "instant".into(),
                    }),
                    mcp_integration_ids: integrations,
                    max_steps: 20,
                    ..Default::default()
                }),
                ..Default::default()
            },
            admin,
        ))
        .await
        .expect("agent")
        .into_inner()
        .agent
        .expect("an agent")
        .id
}

async fn new_thread(
    client: &mut RunsServiceClient<Channel>,
    admin: &str,
    agent_id: &str,
) -> String {
    client
        .create_thread(authed(
            runs::CreateThreadRequest {
                agent_id: agent_id.to_owned(),
                title: String::new(),
                ..Default::default()
            },
            admin,
        ))
        .await
        .expect("thread")
        .into_inner()
        .thread
        .expect("a thread")
        .id
}

/// The scripted model on `port`, calling `example__echo` `rounds` times (one
/// call per turn) before it answers.
fn scripted_model(port: u16, rounds: usize) -> KillOnDrop {
    KillOnDrop(
        Command::new(workspace_binary(
            "switchboard-scripted-model",
            "scripted-model",
        ))
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--tool",
            "example__echo",
            "--arguments",
            r#"{"text":"ping"}"#,
            "--reply",
            "done",
            "--rounds",
            &rounds.to_string(),
        ])
        .env("RUST_LOG", "warn")
        .spawn()
        .expect("the scripted model starts"),
    )
}

/// `count` threads of `agent`, each run once, so each holds its upstream
/// MCP session (a thread's first tool call opens it).
async fn warm_threads(
    client: &mut RunsServiceClient<Channel>,
    admin: &str,
    agent_id: &str,
    count: usize,
) -> Vec<String> {
    let mut threads = Vec::with_capacity(count);
    for _ in 0..count {
        let thread = new_thread(client, admin, agent_id).await;
        run_on(client.clone(), admin.to_owned(), thread.clone()).await;
        threads.push(thread);
    }
    threads
}

/// The duration of one more run on `thread`, which must take `steps` steps.
async fn timed_run(
    client: &RunsServiceClient<Channel>,
    admin: &str,
    thread: &str,
    steps: usize,
) -> Duration {
    let (elapsed, taken) = run_on(client.clone(), admin.to_owned(), thread.to_owned()).await;
    assert_eq!(taken as usize, steps, "tool calls, then the answer");
    elapsed
}

/// Runs a new thread to completion; returns its duration and step count.
async fn one_run(
    client: RunsServiceClient<Channel>,
    admin: String,
    agent_id: String,
) -> (Duration, i32) {
    let mut client = client;
    let thread = new_thread(&mut client, &admin, &agent_id).await;
    run_on(client, admin, thread).await
}

/// Runs one more run on `thread` to completion; returns its duration and
/// step count.
async fn run_on(
    mut client: RunsServiceClient<Channel>,
    admin: String,
    thread: String,
) -> (Duration, i32) {
    let started = Instant::now();
    let mut stream = client
        .execute_run(authed(
            runs::ExecuteRunRequest {
                thread_id: thread,
                input: Some(runs::execute_run_request::Input::UserMessage(
                    runs::UserMessageInput { text: "go".into() },
                )),
                ..Default::default()
            },
            &admin,
        ))
        .await
        .expect("run")
        .into_inner();
    let mut steps = 0;
    while let Some(event) = stream.next().await {
        match event.expect("event").event {
            Some(Event::RunCompleted(done)) => steps = done.run.map_or(0, |r| r.steps),
            Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.error),
            _ => {}
        }
    }
    (started.elapsed(), steps)
}

/// The OTLP endpoint the services export to, with `BENCH_TRACING=export`:
/// a collector in this process, so that every span of every run (100%
/// sampling, the default) is exported; without it they export nothing.
static COLLECTOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let collector = match std::env::var("BENCH_TRACING").as_deref() {
        Ok("export") => {
            let collector = switchboard_test_support::otlp::Collector::start().await;
            let _ = COLLECTOR.set(collector.endpoint());
            println!("tracing: every span exported to an in-process collector");
            Some(collector)
        }
        _ => None,
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let slow = spawn_http(HttpServerOptions {
        discovery_delay: Duration::from_millis(100),
        ..HttpServerOptions::default()
    })
    .await
    .expect("slow example server");
    let fast_port = free_port().expect("a port");
    let _fast = KillOnDrop(
        example_http_server(fast_port)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("the example server starts"),
    );
    let fast_url = format!("http://127.0.0.1:{fast_port}/mcp");
    let model_port = free_port().expect("a port");
    let _model = scripted_model(model_port, 1);
    let model_url = format!("http://127.0.0.1:{model_port}/v1");
    // The same model calling the tool ten times before it answers.
    let long_port = free_port().expect("a port");
    let _long_model = scripted_model(long_port, LONG_TOOL_STEPS);
    let (mcp_process, mcp_url) = start(
        "mcp-service",
        "switchboard-mcp-service",
        dir.path(),
        &[
            ("SWITCHBOARD_DEV_MODE", "true".into()),
            ("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.1/32".into()),
            (
                "SWITCHBOARD_DATA_DIR",
                dir.path().join("mcp").display().to_string(),
            ),
        ],
    );
    // runs-service's database: SQLite under the temp dir, or the PostgreSQL
    // database named by SWITCHBOARD_BENCH_RUNS_DATABASE_URL.
    let runs_database = std::env::var("SWITCHBOARD_BENCH_RUNS_DATABASE_URL").ok();
    if let Some(url) = &runs_database {
        println!("runs-service on {url}");
    }
    let mut runs_env = vec![
        ("SWITCHBOARD_MCP_SERVICE_URL", mcp_url.clone()),
        (
            "SWITCHBOARD_MODEL_PROVIDERS",
            format!("scripted=openai,{model_url};long=openai,http://127.0.0.1:{long_port}/v1"),
        ),
        (
            "SWITCHBOARD_DATA_DIR",
            dir.path().join("runs").display().to_string(),
        ),
    ];
    runs_env.extend(runs_database.map(|url| ("DATABASE_URL", url)));
    let (runs_process, runs_url) = start(
        "runs-service",
        "switchboard-runs-service",
        dir.path(),
        &runs_env,
    );
    wait_for_port(fast_port).await.expect("listening");
    wait_for_port(model_port).await.expect("listening");
    wait_for_port(long_port).await.expect("listening");
    for url in [&mcp_url, &runs_url] {
        wait_serving(url, "", Duration::from_secs(30))
            .await
            .expect("serving");
    }
    let admin = token("bench", "bench-user", &["admin"]);
    let mut mcp_client = McpServiceClient::connect(mcp_url.clone())
        .await
        .expect("mcp");
    let mut runs_client = RunsServiceClient::connect(runs_url.clone())
        .await
        .expect("runs");
    let example = integration(&mut mcp_client, &admin, "example", &fast_url).await;
    let mut slow_ids = Vec::new();
    for i in 0..20 {
        slow_ids.push(integration(&mut mcp_client, &admin, &format!("slow{i}"), &slow.url()).await);
    }
    let fast_agent = agent(&mut runs_client, &admin, "scripted", vec![example.clone()]).await;
    let long_agent = agent(&mut runs_client, &admin, "long", vec![example.clone()]).await;
    let bare_agent = agent(&mut runs_client, &admin, "scripted", vec![]).await;
    let slow_agent = agent(&mut runs_client, &admin, "scripted", slow_ids).await;

    // Warm-up: connections, the discovery cache, the upstream session pool.
    for _ in 0..20 {
        one_run(runs_client.clone(), admin.clone(), fast_agent.clone()).await;
    }

    // Orchestration overhead per step, in conversations that already hold
    // their upstream MCP session. The runs and the model and tool calls they
    // are compared with alternate, so that whatever else the machine does
    // slows them alike.
    let threads = warm_threads(&mut runs_client, &admin, &fast_agent, 50).await;
    let long_threads = warm_threads(&mut runs_client, &admin, &long_agent, 20).await;
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .expect("client");
    let (runs_pid, mcp_pid) = (runs_process.0.id(), mcp_process.0.id());
    let cpu_before = (cpu_time(runs_pid), cpu_time(mcp_pid));
    let (mut two_step_runs, mut long_runs) = (Vec::new(), Vec::new());
    let (mut model_calls, mut tool_calls) = (Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        two_step_runs.push(timed_run(&runs_client, &admin, &threads[i % threads.len()], 2).await);
        if i % 2 == 0 {
            let thread = &long_threads[(i / 2) % long_threads.len()];
            long_runs.push(timed_run(&runs_client, &admin, thread, LONG_TOOL_STEPS + 1).await);
        }
        let started = Instant::now();
        http.post(format!("{model_url}/chat/completions"))
            .json(&serde_json::json!({"model": "instant", "stream": true, "messages": [{"role": "user", "content": "go"}]}))
            .send()
            .await
            .expect("model")
            .bytes()
            .await
            .expect("body");
        model_calls.push(started.elapsed());
        let started = Instant::now();
        mcp_client
            .execute_tool(authed(
                mcp::ExecuteToolRequest {
                    integration_id: example.clone(),
                    tool_name: "echo".into(),
                    arguments: switchboard_proto::json::json_to_struct(
                        &serde_json::json!({"text": "ping"}),
                    ),
                    session_scope: "bench".into(),
                    arguments_json: String::new(),
                    ..Default::default()
                },
                &admin,
            ))
            .await
            .expect("tool");
        tool_calls.push(started.elapsed());
    }
    // Steps runs-service took; ExecuteTool and Discover calls mcp-service
    // served (one Discover per run, one ExecuteTool per tool step and per
    // call measured alone).
    let (steps, long_count) = (ROUNDS * 2 + ROUNDS / 2 * (LONG_TOOL_STEPS + 1), ROUNDS / 2);
    let mcp_calls = ROUNDS + long_count + ROUNDS + long_count * LONG_TOOL_STEPS + ROUNDS;
    let cpu_per_step = (
        (cpu_time(runs_pid) - cpu_before.0) / u32::try_from(steps).expect("few"),
        (cpu_time(mcp_pid) - cpu_before.1) / u32::try_from(mcp_calls).expect("few"),
    );
    for samples in [
        &mut two_step_runs,
        &mut long_runs,
        &mut model_calls,
        &mut tool_calls,
    ] {
        samples.sort_unstable();
    }
    let per_step: Vec<Duration> = two_step_runs.iter().map(|d| *d / 2).collect();
    let mut discoveries = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        mcp_client
            .discover(authed(
                mcp::DiscoverRequest {
                    integration_id: example.clone(),
                    bypass_cache: false,
                    allowed_tools: None,
                },
                &admin,
            ))
            .await
            .expect("discover");
        discoveries.push(started.elapsed());
    }
    discoveries.sort_unstable();
    let mut bare_runs = Vec::new();
    for _ in 0..200 {
        let (elapsed, steps) =
            one_run(runs_client.clone(), admin.clone(), bare_agent.clone()).await;
        assert_eq!(steps, 1, "no tools: the model answers");
        bare_runs.push(elapsed);
    }
    bare_runs.sort_unstable();
    let step = percentile(&per_step, 0.5);
    let overhead =
        step.saturating_sub(percentile(&model_calls, 0.5) + percentile(&tool_calls, 0.5) / 2);
    println!(
        "orchestration, 200 runs of 2 steps (tool call, then answer) on 50 threads with warm sessions:"
    );
    println!(
        "  per step p50 {:.3} ms, p99 {:.3} ms; model call p50 {:.3} ms; ExecuteTool p50 {:.3} ms",
        ms(step),
        ms(percentile(&per_step, 0.99)),
        ms(percentile(&model_calls, 0.5)),
        ms(percentile(&tool_calls, 0.5))
    );
    println!(
        "  CPU per step of runs-service {:.3} ms; per call mcp-service served {:.3} ms",
        ms(cpu_per_step.0),
        ms(cpu_per_step.1)
    );
    println!(
        "  Discover (cached) p50 {:.3} ms; a run of 1 step without integrations p50 {:.3} ms",
        ms(percentile(&discoveries, 0.5)),
        ms(percentile(&bare_runs, 0.5))
    );
    println!(
        "  orchestration overhead per step p50 = step - model call - half a tool call = {:.3} ms (target <= 1 ms)",
        ms(overhead)
    );
    // One more tool step, from the difference of the run medians.
    let extra_steps = (LONG_TOOL_STEPS - 1) as u32;
    let marginal =
        percentile(&long_runs, 0.5).saturating_sub(percentile(&two_step_runs, 0.5)) / extra_steps;
    let marginal_overhead =
        marginal.saturating_sub(percentile(&model_calls, 0.5) + percentile(&tool_calls, 0.5));
    println!(
        "  {} runs of {} steps on 20 threads: p50 {:.3} ms; one more tool step {:.3} ms, of which orchestration {:.3} ms (target <= 1 ms)",
        ROUNDS / 2,
        LONG_TOOL_STEPS + 1,
        ms(percentile(&long_runs, 0.5)),
        ms(marginal),
        ms(marginal_overhead)
    );

    // 500 concurrent runs.
    let rss_before = status_kib(runs_pid, "VmRSS:");
    let started = Instant::now();
    let all = futures::future::join_all((0..500).map(|_| {
        tokio::spawn(one_run(
            runs_client.clone(),
            admin.clone(),
            fast_agent.clone(),
        ))
    }))
    .await;
    let wall = started.elapsed();
    let completed = all
        .into_iter()
        .filter(|r| r.as_ref().is_ok_and(|(_, steps)| *steps == 2))
        .count();
    println!("500 concurrent runs:");
    println!(
        "  {completed}/500 completed in {:.2} s; runs-service RSS {} MiB before, peak {} MiB",
        wall.as_secs_f64(),
        rss_before / 1024,
        status_kib(runs_pid, "VmHWM:") / 1024
    );

    // Discovery of 20 integrations that each take 100 ms to list their tools.
    let (bare, _) = one_run(runs_client.clone(), admin.clone(), bare_agent.clone()).await;
    let (slow_run, _) = one_run(runs_client.clone(), admin.clone(), slow_agent.clone()).await;
    println!("discovery of 20 integrations answering in 100 ms each:");
    println!(
        "  run with them {:.1} ms, run without integrations {:.1} ms: discovery took about {:.1} ms (target <= 150 ms; sequential would be 2000 ms)",
        ms(slow_run),
        ms(bare),
        ms(slow_run.saturating_sub(bare))
    );
    drop(mcp_process);
    drop(runs_process);
    if let Some(collector) = collector {
        println!("spans exported: {}", collector.spans().len());
    }
}
