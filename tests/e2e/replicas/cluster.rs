//! Several runs-service replicas on one database, with one mcp-service, the
//! example MCP server and a scripted model: in-process servers, or the
//! runs-service binary as a process a test can kill.

use std::time::Duration;

use futures::StreamExt as _;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::{
    RUNS_SERVICE_NAME,
    mcp::v1::mcp_service_client::McpServiceClient,
    runs::v1::{self as runs, runs_service_client::RunsServiceClient},
};
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};
use switchboard_server::RunningServer;
use switchboard_test_support::{
    DbKind, TEST_JWT_SECRET, TestDb, authed,
    grpc::{ServiceProcess, start_binary, wait_serving},
    workspace_binary,
};
use tonic::{Streaming, transport::Channel};

use crate::world::{admin, agent_and_thread, create_integration, create_thread};

/// Longest wait for any one event in these tests.
const EVENT_WAIT: Duration = Duration::from_secs(30);

pub struct Cluster {
    pub db: TestDb,
    _mcp_db: TestDb,
    pub mcp: RunningServer,
    pub upstream: RunningHttpServer,
    model: ScriptedModel,
    _replicas: Vec<RunningServer>,
    /// One client per in-process replica.
    pub clients: Vec<RunsServiceClient<Channel>>,
    pub token: String,
    pub thread_id: String,
    work_dir: tempfile::TempDir,
}

/// The model asks for the example server's `sleep` tool for `ms`, then says
/// `answer`.
pub fn sleep_then(ms: u64, answer: &str) -> Vec<Turn> {
    vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "call-1",
            "example__sleep",
            format!("{{\"ms\": {ms}}}"),
        )]),
        Turn::Text(answer.into()),
    ]
}

/// A cluster of `replicas` in-process runs-service replicas; `tune`
/// adjusts each replica's settings.
pub async fn cluster(
    kind: DbKind,
    turns: Vec<Turn>,
    replicas: usize,
    tune: impl Fn(&mut switchboard_runs_service::Config),
) -> Cluster {
    let token = admin();
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("example server");
    let mcp_db = TestDb::sqlite().expect("db");
    let mcp = switchboard_mcp_service::spawn(switchboard_mcp_service::Config::for_tests(
        &mcp_db.url,
        TEST_JWT_SECRET,
    ))
    .await
    .expect("mcp-service");
    let mut mcp_client = McpServiceClient::connect(mcp.url())
        .await
        .expect("connects");
    let integration_id = create_integration(
        &mut mcp_client,
        &token,
        "example",
        &upstream.url(),
        Some(120),
    )
    .await;
    let model = ScriptedModel::start(turns).await.expect("scripted model");
    let db = TestDb::new(kind).await.expect("a test database");
    let mut servers = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..replicas {
        let mut config =
            switchboard_runs_service::Config::for_tests(&db.url, TEST_JWT_SECRET, &mcp.url());
        config.model_providers = format!("scripted=openai,{}", model.base_url());
        config.tool_timeout = Duration::from_secs(120);
        tune(&mut config);
        let server = switchboard_runs_service::spawn(config)
            .await
            .expect("runs-service");
        clients.push(
            RunsServiceClient::connect(server.url())
                .await
                .expect("connects"),
        );
        servers.push(server);
    }
    let thread_id = agent_and_thread(&mut clients[0], &token, &integration_id).await;
    Cluster {
        db,
        _mcp_db: mcp_db,
        mcp,
        upstream,
        model,
        _replicas: servers,
        clients,
        token,
        thread_id,
        work_dir: tempfile::tempdir().expect("a work directory"),
    }
}

impl Cluster {
    /// The runs-service binary as a replica named `name`, on the cluster's
    /// database, with `env` added.
    pub async fn process(&self, name: &str, env: &[(&str, &str)]) -> ServiceProcess {
        let binary = workspace_binary("switchboard-runs-service", "runs-service");
        let providers = format!("scripted=openai,{}", self.model.base_url());
        let mcp_url = self.mcp.url();
        let mut all = vec![
            ("DATABASE_URL", self.db.url.as_str()),
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_MCP_SERVICE_URL", mcp_url.as_str()),
            ("SWITCHBOARD_MODEL_PROVIDERS", providers.as_str()),
            ("SWITCHBOARD_REPLICA_NAME", name),
            ("SWITCHBOARD_TOOL_TIMEOUT", "120s"),
        ];
        all.extend_from_slice(env);
        let process = start_binary(
            binary.to_str().expect("a UTF-8 path"),
            self.work_dir.path(),
            &all,
        )
        .expect("the replica starts");
        wait_serving(&process.url, RUNS_SERVICE_NAME, EVENT_WAIT)
            .await
            .expect("the replica serves");
        process
    }

    /// A client of another replica.
    pub async fn client_of(url: &str) -> RunsServiceClient<Channel> {
        RunsServiceClient::connect(url.to_owned())
            .await
            .expect("connects")
    }

    /// Starts a run on the thread through `client`.
    pub async fn execute(
        &self,
        client: &mut RunsServiceClient<Channel>,
        text: &str,
        detach: bool,
    ) -> Result<Streaming<runs::ExecuteRunResponse>, tonic::Status> {
        self.execute_on(client, &self.thread_id, text, detach).await
    }

    /// Starts a run on `thread_id` through `client`.
    pub async fn execute_on(
        &self,
        client: &mut RunsServiceClient<Channel>,
        thread_id: &str,
        text: &str,
        detach: bool,
    ) -> Result<Streaming<runs::ExecuteRunResponse>, tonic::Status> {
        let request = runs::ExecuteRunRequest {
            thread_id: thread_id.to_owned(),
            input: Some(runs::execute_run_request::Input::UserMessage(
                runs::UserMessageInput { text: text.into() },
            )),
            detach_on_disconnect: detach,
            ..Default::default()
        };
        client
            .execute_run(authed(request, &self.token))
            .await
            .map(tonic::Response::into_inner)
    }

    /// Another thread of the cluster's agent, for the same user.
    pub async fn another_thread(&self, client: &mut RunsServiceClient<Channel>) -> String {
        let agent_id = client
            .get_thread(authed(
                runs::GetThreadRequest {
                    id: self.thread_id.clone(),
                },
                &self.token,
            ))
            .await
            .expect("the thread is found")
            .into_inner()
            .thread
            .expect("a thread")
            .agent_id;
        create_thread(client, &self.token, agent_id).await
    }

    pub async fn get_run(&self, client: &mut RunsServiceClient<Channel>, id: &str) -> runs::Run {
        client
            .get_run(authed(runs::GetRunRequest { id: id.into() }, &self.token))
            .await
            .expect("the run is found")
            .into_inner()
            .run
            .expect("a run")
    }

    pub async fn watch(
        &self,
        client: &mut RunsServiceClient<Channel>,
        id: &str,
        from_sequence: i64,
    ) -> Vec<runs::ExecuteRunResponse> {
        let stream = client
            .watch_run(authed(
                runs::WatchRunRequest {
                    id: id.into(),
                    from_sequence,
                },
                &self.token,
            ))
            .await
            .expect("watching starts")
            .into_inner();
        let events = stream.map(|e| e.expect("an event").event.expect("an event"));
        tokio::time::timeout(EVENT_WAIT * 2, events.collect())
            .await
            .expect("the run ends in time")
    }
}

/// The next event of a run stream; `None` at its end.
pub async fn next(
    stream: &mut Streaming<runs::ExecuteRunResponse>,
) -> Option<runs::ExecuteRunResponse> {
    tokio::time::timeout(EVENT_WAIT, stream.message())
        .await
        .expect("an event in time")
        .expect("a well-formed event")
}

/// Reads events until one of `kind`; returns them all.
pub async fn until(
    stream: &mut Streaming<runs::ExecuteRunResponse>,
    kind: &str,
) -> Vec<runs::ExecuteRunResponse> {
    let mut seen = Vec::new();
    while let Some(event) = next(stream).await {
        let done = kind_of(&event) == kind;
        seen.push(event);
        if done {
            return seen;
        }
    }
    panic!("the stream ended before a {kind} event: {seen:?}");
}

/// The rest of a run stream.
pub async fn rest(
    stream: &mut Streaming<runs::ExecuteRunResponse>,
) -> Vec<runs::ExecuteRunResponse> {
    let mut seen = Vec::new();
    while let Some(event) = next(stream).await {
        seen.push(event);
    }
    seen
}

pub fn kind_of(event: &runs::ExecuteRunResponse) -> &'static str {
    use runs::execute_run_response::Event as E;
    match &event.event {
        Some(E::RunStarted(_)) => "run_started",
        Some(E::TextDelta(_)) => "text_delta",
        Some(E::MessageCreated(_)) => "message_created",
        Some(E::ToolCallStarted(_)) => "tool_call_started",
        Some(E::ToolCallFinished(_)) => "tool_call_finished",
        Some(E::IntegrationDiscoveryFailed(_)) => "integration_discovery_failed",
        Some(E::ClientToolCallsRequired(_)) => "client_tool_calls_required",
        Some(E::TokenUsage(_)) => "token_usage",
        Some(E::RunCompleted(_)) => "run_completed",
        Some(E::RunFailed(_)) => "run_failed",
        Some(E::Heartbeat(_)) => "heartbeat",
        Some(E::ToolInputRequired(_)) => "tool_input_required",
        Some(E::AuthorizationRequired(_)) => "authorization_required",
        Some(E::ToolApprovalRequired(_)) => "tool_approval_required",
        Some(E::SoftBudgetExceeded(_)) => "soft_budget_exceeded",
        Some(E::ToolDefinitionChanged(_)) => "tool_definition_changed",
        Some(E::RunContinued(_)) => "run_continued",
        Some(E::ModelFallback(_)) => "model_fallback",
        None => "none",
    }
}

/// The run id of a stream's events.
pub fn run_id(events: &[runs::ExecuteRunResponse]) -> String {
    events.first().expect("an event").run_id.clone()
}
