//! A whole Switchboard on loopback: mcp-service, runs-service, the example
//! MCP server and a scripted model, with an agent and a thread ready to run.

use std::time::Duration;

use futures::StreamExt as _;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_mcp_service::ElicitationPolicy;
use switchboard_proto::{
    mcp::v1::{self as mcp, mcp_service_client::McpServiceClient},
    runs::v1::{self as runs, runs_service_client::RunsServiceClient},
};
use switchboard_scripted_model::{ScriptedModel, Turn};
use switchboard_server::RunningServer;
use switchboard_test_support::{
    TEST_JWT_SECRET, TestDb, authed, http_integration_with_auth,
    pki::{Issued, TestPki},
    token,
};
use tonic::transport::{Channel, ClientTlsConfig};

pub const ORG: &str = "org-e2e";
/// The SPIFFE ID of runs-service's client certificate in a world over
/// mutual TLS.
pub const RUNS_SPIFFE_ID: &str = "spiffe://cluster.local/ns/switchboard/sa/runs-service";
/// The SPIFFE ID of the certificate the test itself calls mcp-service with.
pub const TEST_SPIFFE_ID: &str = "spiffe://cluster.local/ns/ops/sa/e2e";

pub struct World {
    pub _mcp_db: TestDb,
    pub _runs_db: TestDb,
    pub _mcp: RunningServer,
    /// mcp-service replicas beyond the first, on the same database.
    pub mcp_replicas: Vec<RunningServer>,
    pub _runs: RunningServer,
    pub upstream: RunningHttpServer,
    pub model: ScriptedModel,
    /// The second model provider (`backup`), when the world has one.
    pub backup_model: Option<ScriptedModel>,
    pub runs_client: RunsServiceClient<Channel>,
    pub mcp_client: McpServiceClient<Channel>,
    pub token: String,
    pub integration_id: String,
    pub agent_id: String,
    pub thread_id: String,
    /// The cluster's CA, when the services talk over mutual TLS.
    pub pki: Option<TestPki>,
    /// The client certificate runs-service presents to mcp-service, when
    /// the services talk over mutual TLS.
    pub runs_client_certificate: Option<Issued>,
}

/// Builds the model's script from the integration's id.
pub type TurnsFor = Box<dyn FnOnce(&str) -> Vec<Turn>>;

/// How the world is set up.
pub struct Options {
    pub turns: Vec<Turn>,
    /// Turns built once the integration's id is known (used instead of
    /// `turns` when set).
    pub turns_for: Option<TurnsFor>,
    pub provider_kind: &'static str,
    pub call_timeout_secs: Option<i64>,
    pub mcp_url_override: Option<String>,
    pub agent: Box<dyn FnOnce(&mut runs::Agent)>,
    /// Whether the example server lists its `record` tool.
    pub record_tool: bool,
    /// mcp-service replicas beyond the first; runs-service is given every
    /// replica's URL.
    pub mcp_replicas: usize,
    /// How mcp-service authenticates to the example server.
    pub integration_auth: Option<mcp::auth_config::Method>,
    /// Whether the example server speaks 2026-07-28 and lists its `confirm`
    /// tool, and mcp-service passes its servers' questions to the caller.
    pub questions_to_caller: bool,
    /// Whether both services serve TLS, mcp-service requires client
    /// certificates, and runs-service presents its own to it.
    pub mutual_tls: bool,
    /// runs-service's caller keys (runs continue on another replica), with
    /// heartbeats every 200 ms, so that a stopped run is taken over soon.
    pub caller_keys: Option<String>,
    /// The script of a second model provider, `backup` (model
    /// `backup-model`), configured beside `scripted`.
    pub backup_turns: Option<Vec<Turn>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            turns: Vec::new(),
            turns_for: None,
            provider_kind: "openai",
            call_timeout_secs: None,
            mcp_url_override: None,
            agent: Box::new(|_| {}),
            record_tool: false,
            mcp_replicas: 0,
            integration_auth: None,
            questions_to_caller: false,
            mutual_tls: false,
            caller_keys: None,
            backup_turns: None,
        }
    }
}

pub fn admin() -> String {
    token(ORG, "user-e2e", &["admin"])
}

pub async fn create_integration(
    client: &mut McpServiceClient<Channel>,
    token: &str,
    slug: &str,
    url: &str,
    call_timeout_secs: Option<i64>,
) -> String {
    create_integration_with_auth(client, token, slug, url, call_timeout_secs, None).await
}

pub async fn create_integration_with_auth(
    client: &mut McpServiceClient<Channel>,
    token: &str,
    slug: &str,
    url: &str,
    call_timeout_secs: Option<i64>,
    auth: Option<mcp::auth_config::Method>,
) -> String {
    let request = mcp::CreateIntegrationRequest {
        timeouts: call_timeout_secs.map(|seconds| mcp::Timeouts {
            connect: Some(prost_types::Duration {
                seconds: 2,
                nanos: 0,
            }),
            call: Some(prost_types::Duration { seconds, nanos: 0 }),
        }),
        ..http_integration_with_auth(slug, url, auth)
    };
    client
        .create_integration(authed(request, token))
        .await
        .expect("integration created")
        .into_inner()
        .integration
        .expect("an integration")
        .id
}

pub async fn world(options: Options) -> World {
    let token = admin();
    let upstream = spawn_http(HttpServerOptions {
        record_tool: options.record_tool,
        confirm_tool: options.questions_to_caller,
        // Servers ask this way from 2026-07-28 on, whose lifecycle is
        // stateless.
        stateful: !options.questions_to_caller,
        ..HttpServerOptions::default()
    })
    .await
    .expect("example server");
    let mcp_db = TestDb::sqlite().expect("db");
    let mut mcp_config = switchboard_mcp_service::Config::for_tests(&mcp_db.url, TEST_JWT_SECRET);
    if options.questions_to_caller {
        mcp_config.elicitation = ElicitationPolicy::Caller;
    }
    let pki = options.mutual_tls.then(|| TestPki::new("cluster CA"));
    let serve_mutual_tls = |config: &mut switchboard_mcp_service::Config| {
        if let Some(pki) = &pki {
            let cert = pki.server("mcp-service");
            let tls = &mut config.common.server.tls;
            tls.tls_cert_file = Some(cert.cert_file);
            tls.tls_key_file = Some(cert.key_file);
            tls.tls_client_ca_file = Some(pki.ca_file());
        }
    };
    serve_mutual_tls(&mut mcp_config);
    let mcp = switchboard_mcp_service::spawn(mcp_config)
        .await
        .expect("mcp-service");
    let mut mcp_replicas = Vec::new();
    for _ in 0..options.mcp_replicas {
        let mut config = switchboard_mcp_service::Config::for_tests(&mcp_db.url, TEST_JWT_SECRET);
        serve_mutual_tls(&mut config);
        let replica = switchboard_mcp_service::spawn(config)
            .await
            .expect("mcp-service replica");
        mcp_replicas.push(replica);
    }
    let mcp_urls = std::iter::once(&mcp)
        .chain(&mcp_replicas)
        .map(RunningServer::url)
        .collect::<Vec<_>>()
        .join(",");
    let test_identity = pki
        .as_ref()
        .map(|pki| pki.client_tls(Some(&pki.client("e2e", Some(TEST_SPIFFE_ID), "e2e"))));
    let mut mcp_client = McpServiceClient::new(connect(&mcp.url(), test_identity).await);
    let integration_id = create_integration_with_auth(
        &mut mcp_client,
        &token,
        "example",
        &upstream.url(),
        options.call_timeout_secs,
        options.integration_auth,
    )
    .await;

    let turns = match options.turns_for {
        Some(build) => build(&integration_id),
        None => options.turns,
    };
    let model = ScriptedModel::start(turns).await.expect("scripted model");
    let runs_db = TestDb::sqlite().expect("db");
    let mut config = switchboard_runs_service::Config::for_tests(
        &runs_db.url,
        TEST_JWT_SECRET,
        options.mcp_url_override.as_deref().unwrap_or(&mcp_urls),
    );
    config.model_providers = format!("scripted={},{}", options.provider_kind, model.base_url());
    let backup_model = match options.backup_turns {
        Some(turns) => Some(ScriptedModel::start(turns).await.expect("backup model")),
        None => None,
    };
    if let Some(backup) = &backup_model {
        config.model_providers += &format!(";backup=openai,{}", backup.base_url());
    }
    config.tool_timeout = Duration::from_secs(20);
    if let Some(keys) = options.caller_keys {
        config.takeovers.run_caller_keys = Some(keys);
        config.replicas.run_heartbeat_interval = Duration::from_millis(200);
    }
    let mut runs_client_certificate = None;
    if let Some(pki) = &pki {
        let serving = pki.server("runs-service");
        config.common.server.tls.tls_cert_file = Some(serving.cert_file);
        config.common.server.tls.tls_key_file = Some(serving.key_file);
        let client = pki.client("runs-client", Some(RUNS_SPIFFE_ID), "runs-service");
        let tls = &mut config.mcp_service_tls;
        tls.mcp_service_tls_ca_file = Some(pki.ca_file());
        tls.mcp_service_tls_cert_file = Some(client.cert_file.clone());
        tls.mcp_service_tls_key_file = Some(client.key_file.clone());
        runs_client_certificate = Some(client);
    }
    let runs = switchboard_runs_service::spawn(config)
        .await
        .expect("runs-service");
    let mut runs_client = RunsServiceClient::new(
        connect(&runs.url(), pki.as_ref().map(|pki| pki.client_tls(None))).await,
    );

    let mut agent = runs::Agent {
        name: "assistant".into(),
        instructions: "You help with sales data.".into(),
        model: Some(runs::ModelRef {
            provider: "scripted".into(),
            model: "test-model".into(),
        }),
        mcp_integration_ids: vec![integration_id.clone()],
        ..Default::default()
    };
    (options.agent)(&mut agent);
    let agent_id = runs_client
        .create_agent(authed(
            runs::CreateAgentRequest {
                agent: Some(agent),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("agent created")
        .into_inner()
        .agent
        .expect("an agent")
        .id;
    let thread_id = runs_client
        .create_thread(authed(
            runs::CreateThreadRequest {
                agent_id: agent_id.clone(),
                title: "e2e".into(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("thread created")
        .into_inner()
        .thread
        .expect("a thread")
        .id;
    World {
        _mcp_db: mcp_db,
        _runs_db: runs_db,
        _mcp: mcp,
        mcp_replicas,
        _runs: runs,
        upstream,
        model,
        backup_model,
        runs_client,
        mcp_client,
        token,
        integration_id,
        agent_id,
        thread_id,
        pki,
        runs_client_certificate,
    }
}

/// A connection to `url`, over TLS with `tls`.
async fn connect(url: &str, tls: Option<ClientTlsConfig>) -> Channel {
    let mut endpoint = Channel::from_shared(url.to_owned()).expect("a URL");
    if let Some(tls) = tls {
        endpoint = endpoint.tls_config(tls).expect("a TLS configuration");
    }
    endpoint.connect().await.expect("connects")
}

impl World {
    /// Runs the agent on `text` and collects every event until the stream ends.
    pub async fn say(&mut self, text: &str) -> Vec<runs::ExecuteRunResponse> {
        let request = runs::ExecuteRunRequest {
            thread_id: self.thread_id.clone(),
            input: Some(runs::execute_run_request::Input::UserMessage(
                runs::UserMessageInput { text: text.into() },
            )),
            ..Default::default()
        };
        self.execute(request).await
    }

    pub async fn execute(
        &mut self,
        request: runs::ExecuteRunRequest,
    ) -> Vec<runs::ExecuteRunResponse> {
        let stream = self
            .runs_client
            .execute_run(authed(request, &self.token))
            .await
            .expect("the run starts")
            .into_inner();
        tokio::time::timeout(
            Duration::from_secs(60),
            stream.map(|e| e.expect("an event")).collect(),
        )
        .await
        .expect("the run ends in time")
    }

    /// Points the agent at `integration_ids`.
    pub async fn set_integrations(&mut self, integration_ids: Vec<String>) {
        let agent = runs::Agent {
            id: self.agent_id.clone(),
            mcp_integration_ids: integration_ids,
            ..Default::default()
        };
        self.runs_client
            .update_agent(authed(
                runs::UpdateAgentRequest {
                    agent: Some(agent),
                    update_mask: Some(prost_types::FieldMask {
                        paths: vec!["mcp_integration_ids".into()],
                    }),
                },
                &self.token,
            ))
            .await
            .expect("agent updated");
    }

    pub async fn messages(&mut self) -> Vec<runs::Message> {
        self.runs_client
            .list_messages(authed(
                runs::ListMessagesRequest {
                    thread_id: self.thread_id.clone(),
                    page_size: 500,
                    page_token: String::new(),
                },
                &self.token,
            ))
            .await
            .expect("messages")
            .into_inner()
            .messages
    }
}

/// The final run of an event list.
pub fn final_run(events: &[runs::ExecuteRunResponse]) -> runs::Run {
    use runs::execute_run_response::Event;
    match events.last().and_then(|e| e.event.clone()) {
        Some(Event::RunCompleted(done)) => done.run.expect("a run"),
        Some(Event::RunFailed(failed)) => panic!("the run failed: {}", failed.error),
        other => panic!("the stream ended with {other:?}"),
    }
}

/// The tool results the model was sent in request `index`, in order
/// (OpenAI-style `role: tool` messages).
pub fn tool_messages_sent(model: &ScriptedModel, index: usize) -> Vec<String> {
    let requests = model.requests();
    requests[index]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The tool names offered in request `index`.
pub fn tools_offered(model: &ScriptedModel, index: usize) -> Vec<String> {
    model.requests()[index]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An agent of the scripted model with `integration_id`, and a thread of
/// it, for the holder of `token`; the thread's id.
pub async fn agent_and_thread(
    client: &mut RunsServiceClient<Channel>,
    token: &str,
    integration_id: &str,
) -> String {
    let agent = runs::Agent {
        name: "assistant".into(),
        instructions: "You help.".into(),
        model: Some(runs::ModelRef {
            provider: "scripted".into(),
            model: "test-model".into(),
        }),
        mcp_integration_ids: vec![integration_id.to_owned()],
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
        .expect("agent created")
        .into_inner()
        .agent
        .expect("an agent")
        .id;
    create_thread(client, token, agent_id).await
}

/// A new thread of `agent_id` for the holder of `token`.
pub async fn create_thread(
    client: &mut RunsServiceClient<Channel>,
    token: &str,
    agent_id: String,
) -> String {
    client
        .create_thread(authed(
            runs::CreateThreadRequest {
                agent_id,
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("thread created")
        .into_inner()
        .thread
        .expect("a thread")
        .id
}
