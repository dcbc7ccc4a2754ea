//! Two replicas of each service as real processes on one PostgreSQL, the
//! example MCP server as a process (so it can be killed) and a scripted
//! model, with an integration and an agent ready.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use switchboard_proto::{
    mcp::v1::mcp_service_client::McpServiceClient,
    runs::v1::{self as runs, runs_service_client::RunsServiceClient},
};
use switchboard_scripted_model::{Looping, ScriptedModel};
use switchboard_test_support::{
    TEST_JWT_SECRET, authed, example_http_server,
    grpc::{ServiceProcess, free_port, start_binary, wait_serving},
    http_integration_request,
    pki::{Issued, TestPki},
    token, workspace_binary,
};
use tonic::transport::Channel;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::cluster::Cluster;

/// The tool every run calls: the example server's `sleep`.
pub const TOOL: &str = "example__sleep";

/// What each run does: `calls` calls to [`TOOL`] of `sleep_ms` each, one per
/// model turn, then an answer.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub calls: usize,
    pub sleep_ms: u64,
    /// The runs' lease (`SWITCHBOARD_RUN_STALE_AFTER`); heartbeats come six
    /// times as often.
    pub lease: Duration,
    /// What the agent's runs do when their replica stops.
    pub recovery: runs::RunRecovery,
}

impl Default for Workload {
    /// Two 1.5-second calls: long enough for a fault to strike mid-call.
    fn default() -> Self {
        Self {
            calls: 2,
            sleep_ms: 1500,
            lease: STALE_AFTER,
            recovery: runs::RunRecovery::Unspecified,
        }
    }
}

/// The suite's lease of a run: how long it lives without its replica's
/// heartbeat (short, so a killed replica's runs end within the test).
pub const STALE_AFTER: Duration = Duration::from_secs(3);

/// How runs-service reaches mcp-service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// Plaintext HTTP/2.
    Plaintext,
    /// Mutual TLS: mcp-service serves TLS and requires a client
    /// certificate, runs-service presents its own.
    MutualTls,
}

/// The certificates of a fleet over mutual TLS, from a CA of its own.
struct Certificates {
    pki: TestPki,
    /// mcp-service's serving certificate.
    mcp: Issued,
    /// runs-service's client certificate.
    runs: Issued,
    /// The test's own client certificate, to call mcp-service with.
    test: Issued,
}

/// The whole system under test.
pub struct Fleet {
    pub cluster: Cluster,
    pub mcp: Vec<Option<ServiceProcess>>,
    pub runs: Vec<Option<ServiceProcess>>,
    pub upstream: Option<Child>,
    upstream_port: u16,
    pub calls_log: PathBuf,
    workload: Workload,
    certificates: Option<Certificates>,
    _dir: tempfile::TempDir,
    _model: ScriptedModel,
    pub token: String,
    pub agent_id: String,
}

impl Fleet {
    /// A fleet whose runs-service reaches mcp-service over `hop`.
    pub async fn start_over(workload: Workload, hop: Hop) -> anyhow::Result<Self> {
        let cluster = Cluster::start()?;
        cluster.create_database("mcp")?;
        cluster.create_database("runs")?;
        let dir = tempfile::tempdir()?;
        let calls_log = dir.path().join("calls.log");
        let upstream_port = free_port()?;
        let model = ScriptedModel::start_looping(
            Looping::new(
                Some(TOOL.into()),
                format!(r#"{{"ms":{}}}"#, workload.sleep_ms),
                "no tools",
            )
            .rounds(workload.calls),
        )
        .await?;
        let mut fleet = Self {
            workload,
            certificates: (hop == Hop::MutualTls).then(|| {
                let pki = TestPki::new("fleet CA");
                Certificates {
                    mcp: pki.server("mcp-service"),
                    runs: pki.client("runs-service", Some(RUNS_SPIFFE_ID), "runs-service"),
                    test: pki.client("faults", None, "faults"),
                    pki,
                }
            }),
            mcp: Vec::new(),
            runs: Vec::new(),
            upstream: None,
            upstream_port,
            calls_log,
            _dir: dir,
            token: token("org-faults", "user-faults", &["admin"]),
            agent_id: String::new(),
            cluster,
            _model: model,
        };
        fleet.start_upstream().await?;
        for _ in 0..2 {
            let replica = fleet.start_mcp(free_port()?).await?;
            fleet.mcp.push(Some(replica));
        }
        for index in 0..2 {
            let replica = fleet.start_runs(index).await?;
            fleet.runs.push(Some(replica));
        }
        fleet.agent_id = fleet.create_agent().await?;
        Ok(fleet)
    }

    /// Starts (or starts again, on the same port) the example MCP server.
    pub async fn start_upstream(&mut self) -> anyhow::Result<()> {
        let child = example_http_server(self.upstream_port)
            .env(
                switchboard_example_mcp_server::CALL_LOG_ENV,
                &self.calls_log,
            )
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .spawn()?;
        self.upstream = Some(child);
        let url = format!("127.0.0.1:{}", self.upstream_port);
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(&url).await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        anyhow::bail!("the example MCP server did not listen on {url}")
    }

    /// Kills the example MCP server as a crash would.
    pub fn kill_upstream(&mut self) {
        if let Some(mut child) = self.upstream.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    async fn start_mcp(&self, port: u16) -> anyhow::Result<ServiceProcess> {
        let binary = workspace_binary("switchboard-mcp-service", "mcp-service");
        let mut command = Command::new(binary);
        if let Some(certificates) = &self.certificates {
            command
                .env("SWITCHBOARD_TLS_CERT_FILE", &certificates.mcp.cert_file)
                .env("SWITCHBOARD_TLS_KEY_FILE", &certificates.mcp.key_file)
                .env("SWITCHBOARD_TLS_CLIENT_CA_FILE", certificates.pki.ca_file());
        }
        let child = command
            .current_dir(self._dir.path())
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("DATABASE_URL", self.cluster.url("mcp"))
            .env("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET)
            .env("SWITCHBOARD_SECRET_KEYS", SEALING_KEY)
            .env("SWITCHBOARD_OUTBOUND_ALLOW", "127.0.0.0/8")
            .env("SWITCHBOARD_MCP_CONNECT_TIMEOUT", "2s")
            .env("SWITCHBOARD_MCP_CALL_TIMEOUT", "20s")
            .env("SWITCHBOARD_READINESS_INTERVAL", "500ms")
            .env("SWITCHBOARD_LOG_FORMAT", "pretty")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?;
        let scheme = if self.certificates.is_some() {
            "https"
        } else {
            "http"
        };
        let process = ServiceProcess {
            child,
            url: format!("{scheme}://127.0.0.1:{port}"),
        };
        self.wait_mcp_serving(&process.url).await?;
        Ok(process)
    }

    /// Kills mcp-service replica `index` as a crash would and starts it
    /// again on the same address.
    #[allow(
        dead_code,
        reason = "the soak benchmark's fault; the suite kills for good"
    )]
    pub async fn restart_mcp(&mut self, index: usize) -> anyhow::Result<()> {
        let port = self.mcp[index]
            .as_ref()
            .and_then(|p| p.url.rsplit(':').next()?.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("mcp-service replica {index} is down"))?;
        Self::kill(&mut self.mcp, index);
        self.mcp[index] = Some(self.start_mcp(port).await?);
        Ok(())
    }

    async fn start_runs(&self, index: usize) -> anyhow::Result<ServiceProcess> {
        let name = format!("runs-{index}");
        let binary = workspace_binary("switchboard-runs-service", "runs-service");
        let url = self.cluster.url("runs");
        let mcp_urls = self
            .mcp
            .iter()
            .flatten()
            .map(|p| p.url.clone())
            .collect::<Vec<_>>()
            .join(",");
        let providers = format!("scripted=openai,{}", self._model.base_url());
        let stale = format!("{}ms", self.workload.lease.as_millis());
        let heartbeat = format!("{}ms", (self.workload.lease / 6).as_millis());
        let mut tls = Vec::new();
        if let Some(certificates) = &self.certificates {
            tls = vec![
                (
                    "SWITCHBOARD_MCP_SERVICE_TLS_CA_FILE",
                    certificates.pki.ca_file(),
                ),
                (
                    "SWITCHBOARD_MCP_SERVICE_TLS_CERT_FILE",
                    certificates.runs.cert_file.clone(),
                ),
                (
                    "SWITCHBOARD_MCP_SERVICE_TLS_KEY_FILE",
                    certificates.runs.key_file.clone(),
                ),
            ];
        }
        let tls = tls
            .iter()
            .map(|(name, file)| (*name, file.display().to_string()))
            .collect::<Vec<_>>();
        let mut env = vec![
            ("DATABASE_URL", url.as_str()),
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_MCP_SERVICE_URL", mcp_urls.as_str()),
            ("SWITCHBOARD_MODEL_PROVIDERS", providers.as_str()),
            ("SWITCHBOARD_RUN_STALE_AFTER", stale.as_str()),
            ("SWITCHBOARD_RUN_HEARTBEAT_INTERVAL", heartbeat.as_str()),
            ("SWITCHBOARD_REPLICA_NAME", name.as_str()),
            ("SWITCHBOARD_RUN_CALLER_KEYS", CALLER_KEYS),
            ("SWITCHBOARD_TOOL_TIMEOUT", "20s"),
            ("SWITCHBOARD_READINESS_INTERVAL", "500ms"),
            ("SWITCHBOARD_LOG_FORMAT", "pretty"),
            ("RUST_LOG", "warn"),
        ];
        env.extend(tls.iter().map(|(name, file)| (*name, file.as_str())));
        let process = start_binary(&binary.display().to_string(), self._dir.path(), &env)?;
        wait_serving(&process.url, "", Duration::from_secs(60)).await?;
        Ok(process)
    }

    /// A connection to mcp-service at `url`, over mutual TLS with the
    /// test's own certificate when the fleet's hop is.
    async fn mcp_channel(&self, url: &str) -> anyhow::Result<Channel> {
        let mut endpoint = Channel::from_shared(url.to_owned())?;
        if let Some(certificates) = &self.certificates {
            endpoint =
                endpoint.tls_config(certificates.pki.client_tls(Some(&certificates.test)))?;
        }
        Ok(endpoint.connect().await?)
    }

    /// A connection to mcp-service replica `index`, as the test's own
    /// service.
    pub async fn mcp_replica(&self, index: usize) -> anyhow::Result<Channel> {
        let replica = self.mcp[index]
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("mcp-service replica {index} is down"))?;
        self.mcp_channel(&replica.url).await
    }

    /// Waits until the mcp-service replica at `url` answers SERVING.
    async fn wait_mcp_serving(&self, url: &str) -> anyhow::Result<()> {
        let limit = Duration::from_secs(60);
        let start = std::time::Instant::now();
        loop {
            if let Ok(channel) = self.mcp_channel(url).await {
                let status = HealthClient::new(channel)
                    .check(HealthCheckRequest::default())
                    .await;
                if status.is_ok_and(|r| r.into_inner().status == 1) {
                    return Ok(());
                }
            }
            anyhow::ensure!(
                start.elapsed() < limit,
                "mcp-service at {url} was not SERVING within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A client of runs-service replica `index`.
    pub async fn runs_client(&self, index: usize) -> anyhow::Result<RunsServiceClient<Channel>> {
        let replica = self.runs[index]
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("runs-service replica {index} is down"))?;
        Ok(RunsServiceClient::connect(replica.url.clone()).await?)
    }

    /// A runs-service replica that is up.
    pub fn live_runs_replica(&self) -> usize {
        self.runs
            .iter()
            .position(Option::is_some)
            .expect("a runs-service replica is up")
    }

    /// Kills replica `index` of `replicas` as a crash would (SIGKILL).
    pub fn kill(replicas: &mut [Option<ServiceProcess>], index: usize) {
        replicas[index] = None; // ServiceProcess kills its child when dropped
    }

    async fn create_agent(&self) -> anyhow::Result<String> {
        let mut mcp_client = McpServiceClient::new(self.mcp_replica(0).await?);
        let upstream = format!("http://127.0.0.1:{}/mcp", self.upstream_port);
        let integration = mcp_client
            .create_integration(authed(
                http_integration_request("example", &upstream),
                &self.token,
            ))
            .await?
            .into_inner()
            .integration
            .ok_or_else(|| anyhow::anyhow!("no integration"))?;
        let agent = runs::Agent {
            name: "faults".into(),
            instructions: "Sleep when asked.".into(),
            model: Some(runs::ModelRef {
                provider: "scripted".into(),
                model: "test-model".into(),
            }),
            mcp_integration_ids: vec![integration.id],
            recovery: self.workload.recovery.into(),
            ..Default::default()
        };
        let mut client = self.runs_client(0).await?;
        let agent = client
            .create_agent(authed(
                runs::CreateAgentRequest {
                    agent: Some(agent),
                    ..Default::default()
                },
                &self.token,
            ))
            .await?
            .into_inner()
            .agent
            .ok_or_else(|| anyhow::anyhow!("no agent"))?;
        Ok(agent.id)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.kill_upstream();
    }
}

/// The SPIFFE ID of runs-service's client certificate over mutual TLS.
pub const RUNS_SPIFFE_ID: &str = "spiffe://cluster.local/ns/switchboard/sa/runs-service";

/// The key both runs-service replicas seal the callers of runs that
/// continue with.
const CALLER_KEYS: &str = "faults:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

/// The key both mcp-service replicas seal credentials with.
const SEALING_KEY: &str = "faults:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
