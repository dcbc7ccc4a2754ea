//! The SQL-load neighbour: an organization importing large CSVs into its
//! data sources back to back in runs-service (CSV parsing, Parquet, the
//! database's writes), while the quiet organization makes small imports of
//! its own there and ExecuteTool calls through mcp-service on the same
//! machine.

use std::{
    path::Path,
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use switchboard_proto::runs::v1::{self as runs, runs_service_client::RunsServiceClient};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed,
    bench::KillOnDrop,
    grpc::{free_port, wait_serving},
    token, workspace_binary,
};
use tonic::transport::Channel;

use crate::Phase;

/// Small imports the quiet organization makes per phase.
pub const QUIET_IMPORTS: usize = 400;
/// Rows of one of the quiet organization's imports.
const QUIET_ROWS: usize = 20;
/// The noisy organization's callers, each importing again as soon as its
/// import ends.
pub const NOISY_IMPORTERS: usize = 8;
/// Rows of one of the noisy organization's imports (about 2.5 MB).
pub const NOISY_ROWS: usize = 50_000;

/// How runs-service's data-source threads are set for a row.
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    /// `SWITCHBOARD_DATA_SOURCE_THREADS`, or the default.
    pub threads: Option<usize>,
    /// `SWITCHBOARD_DATA_SOURCE_NICE`, or the default.
    pub nice: Option<i32>,
    /// `SWITCHBOARD_DATA_SOURCE_PIECE_BYTES`, or the default.
    pub piece_bytes: Option<usize>,
}

impl Pool {
    /// As data-source work ran before it had threads of its own: as many
    /// imports parsed at once as hold a slot (4), at the service's priority.
    pub const AS_BEFORE: Self = Self {
        threads: Some(4),
        nice: Some(0),
        piece_bytes: None,
    };
    /// The default threads and nice, with a whole import a turn (pieces as
    /// large as the largest CSV), as before imports were parsed in pieces.
    pub const WHOLE_IMPORTS: Self = Self {
        threads: None,
        nice: None,
        piece_bytes: Some(15 * 1024 * 1024),
    };
    /// The defaults.
    pub const DEFAULT: Self = Self {
        threads: None,
        nice: None,
        piece_bytes: None,
    };
}

/// runs-service as a release binary on SQLite, its data sources bounded
/// only by the machine (the noisy organization imports for the whole row)
/// and its data-source threads set as `pool` says.
pub async fn runs_service(dir: &Path, mcp_url: &str, pool: Pool) -> (KillOnDrop, String) {
    let port = free_port().expect("a port");
    let mut command = Command::new(workspace_binary("switchboard-runs-service", "runs-service"));
    if let Some(threads) = pool.threads {
        command.env("SWITCHBOARD_DATA_SOURCE_THREADS", threads.to_string());
    }
    if let Some(nice) = pool.nice {
        command.env("SWITCHBOARD_DATA_SOURCE_NICE", nice.to_string());
    }
    if let Some(bytes) = pool.piece_bytes {
        command.env("SWITCHBOARD_DATA_SOURCE_PIECE_BYTES", bytes.to_string());
    }
    let child = command
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env(
            "SWITCHBOARD_DATA_DIR",
            dir.join(format!("runs-data-{port}")),
        )
        .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
        .env("SWITCHBOARD_MCP_SERVICE_URL", mcp_url)
        // Agents must name a provider; no run is started here.
        .env(
            "SWITCHBOARD_MODEL_PROVIDERS",
            "none=openai,http://127.0.0.1:9",
        )
        .env(
            "SWITCHBOARD_DATA_SOURCE_ORG_BYTES",
            (1u64 << 40).to_string(),
        )
        .env("SWITCHBOARD_ORG_RATE_LIMIT", "1000000")
        .env("SWITCHBOARD_ORG_RATE_BURST", "1000000")
        .env("RUST_LOG", "warn")
        .env("SWITCHBOARD_LOG_FORMAT", "pretty")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("runs-service starts");
    let url = format!("http://127.0.0.1:{port}");
    wait_serving(&url, "", Duration::from_secs(60))
        .await
        .expect("runs-service serves");
    (KillOnDrop(child), url)
}

/// A CSV of `rows` rows of five columns.
fn csv(rows: usize) -> Vec<u8> {
    let mut out = String::from("id,region,product,units,price\n");
    for id in 0..rows {
        out.push_str(&format!(
            "{id},region-{},product-{},{},{}.{:02}\n",
            id % 8,
            id % 97,
            id % 13,
            id % 500,
            id % 100
        ));
    }
    out.into_bytes()
}

/// A thread of a new agent of the holder of `token`, for its data sources.
async fn thread(client: &mut RunsServiceClient<Channel>, token: &str) -> String {
    let agent = runs::Agent {
        name: "bench".into(),
        instructions: "Answer.".into(),
        model: Some(runs::ModelRef {
            provider: "none".into(),
            model: "none".into(),
        }),
        ..Default::default()
    };
    let agent_id = client
        .create_agent(authed(
            runs::CreateAgentRequest {
                agent: Some(agent),
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("an agent")
        .into_inner()
        .agent
        .expect("the agent")
        .id;
    client
        .create_thread(authed(
            runs::CreateThreadRequest {
                agent_id,
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("a thread")
        .into_inner()
        .thread
        .expect("the thread")
        .id
}

fn import(
    thread: &str,
    name: String,
    csv: &[u8],
    token: &str,
) -> tonic::Request<runs::ImportDataSourceRequest> {
    authed(
        runs::ImportDataSourceRequest {
            thread_id: thread.to_owned(),
            name,
            csv: csv.to_vec(),
            ..Default::default()
        },
        token,
    )
}

/// The quiet organization's small imports, `QUIET_IMPORTS` from 4 callers.
pub struct Quiet {
    client: RunsServiceClient<Channel>,
    thread: String,
    token: String,
    csv: Arc<Vec<u8>>,
}

impl Quiet {
    pub async fn new(channel: Channel) -> Self {
        let mut client = RunsServiceClient::new(channel);
        let token = token("quiet", "quiet-user", &["admin"]);
        let thread = thread(&mut client, &token).await;
        Self {
            client,
            thread,
            token,
            csv: Arc::new(csv(QUIET_ROWS)),
        }
    }

    pub async fn phase(&self, label: &str) -> Phase {
        let workers = (0..4).map(|worker| {
            let (mut client, thread, token, csv) = (
                self.client.clone(),
                self.thread.clone(),
                self.token.clone(),
                self.csv.clone(),
            );
            let label = label.to_owned();
            tokio::spawn(async move {
                let (mut latencies, mut refused) = (Vec::new(), 0);
                for n in 0..QUIET_IMPORTS / 4 {
                    let name = format!("quiet_{label}_{worker}_{n}");
                    let started = Instant::now();
                    match client
                        .import_data_source(import(&thread, name, &csv, &token))
                        .await
                    {
                        Ok(_) => latencies.push(started.elapsed()),
                        Err(_) => refused += 1,
                    }
                }
                (latencies, refused)
            })
        });
        Phase::of_workers(workers, QUIET_IMPORTS).await
    }
}

/// The noisy organization: `NOISY_IMPORTERS` callers importing
/// `NOISY_ROWS`-row CSVs back to back. They run on a runtime of their own,
/// as another team's clients run on their own machines: they share the
/// machine's cores with the quiet organization's callers, but not the
/// worker threads that time them.
pub struct Noisy {
    stop: Arc<AtomicBool>,
    /// Imports done.
    pub done: Arc<AtomicU64>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Noisy {
    pub async fn start(url: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("noisy")
            .enable_all()
            .build()
            .expect("the noisy organization's runtime");
        let (stop, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let started = runtime.spawn(importers(url.to_owned(), stop.clone(), done.clone()));
        started.await.expect("the noisy organization starts");
        // Time for the imports to be under way.
        tokio::time::sleep(Duration::from_secs(1)).await;
        Self {
            stop,
            done,
            runtime: Some(runtime),
        }
    }
}

/// Starts the noisy organization's importers on the current runtime.
async fn importers(url: String, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) {
    let channel = Channel::from_shared(url)
        .expect("a URL")
        .connect()
        .await
        .expect("connects");
    let mut client = RunsServiceClient::new(channel);
    let token = token("sql-noisy", "noisy-user", &["admin"]);
    let thread = thread(&mut client, &token).await;
    let csv = Arc::new(csv(NOISY_ROWS));
    for worker in 0..NOISY_IMPORTERS {
        let (mut client, thread, token, csv, stop, done) = (
            client.clone(),
            thread.clone(),
            token.clone(),
            csv.clone(),
            stop.clone(),
            done.clone(),
        );
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let name = format!("noisy_{worker}_{n}");
                if client
                    .import_data_source(import(&thread, name, &csv, &token))
                    .await
                    .is_ok()
                {
                    done.fetch_add(1, Ordering::Relaxed);
                } else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
    }
}

impl Drop for Noisy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
