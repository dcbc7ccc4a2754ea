//! Hostile models and clients: streams that never end, stall or carry huge
//! events; threads longer than the history limit; input past its limits.
//! runs-service over real gRPC on loopback with the real scripted model
//! server, on both databases.

mod history;
mod input;
mod stream;

use std::time::Duration;

use futures::StreamExt as _;
use switchboard_proto::runs::v1::{
    self as runs, execute_run_response::Event, runs_service_client::RunsServiceClient,
};
use switchboard_runs_service::Config;
use switchboard_scripted_model::{ScriptedModel, Turn};
use switchboard_server::RunningServer;
use switchboard_test_support::{DbKind, TEST_JWT_SECRET, TestDb, authed, token};
use tonic::{Code, Status, transport::Channel};

/// Both wire APIs, as `SWITCHBOARD_MODEL_PROVIDERS` names them.
pub const PROVIDERS: [&str; 2] = ["openai", "anthropic"];

/// runs-service with one agent (no integrations) on a scripted model, and a
/// thread of that agent.
pub struct Bench {
    pub _db: TestDb,
    pub server: RunningServer,
    pub model: ScriptedModel,
    pub client: RunsServiceClient<Channel>,
    pub token: String,
    pub thread_id: String,
}

/// A bench whose model answers `turns` over the `provider` API, with
/// `tune` applied to the service's settings.
pub async fn bench(
    kind: DbKind,
    provider: &str,
    turns: Vec<Turn>,
    tune: impl FnOnce(&mut Config),
) -> Bench {
    bench_with_agent(kind, provider, turns, tune, |_| {}).await
}

/// [`bench`] with `agent` applied to the agent before it is created.
pub async fn bench_with_agent(
    kind: DbKind,
    provider: &str,
    turns: Vec<Turn>,
    tune: impl FnOnce(&mut Config),
    agent: impl FnOnce(&mut runs::Agent),
) -> Bench {
    let db = TestDb::new(kind).await.expect("a test database");
    let model = ScriptedModel::start(turns).await.expect("scripted model");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET, "http://127.0.0.1:1");
    config.model_providers = format!("scripted={provider},{}", model.base_url());
    tune(&mut config);
    let server = switchboard_runs_service::spawn(config)
        .await
        .expect("runs-service starts");
    let mut client = RunsServiceClient::connect(server.url())
        .await
        .expect("connects");
    let token = token("org-hostile", "user-hostile", &["admin"]);
    let mut spec = runs::Agent {
        name: "hostile".into(),
        model: Some(runs::ModelRef {
            provider: "scripted".into(),
            model: "test-model".into(),
        }),
        ..Default::default()
    };
    agent(&mut spec);
    let agent_id = client
        .create_agent(authed(
            runs::CreateAgentRequest {
                agent: Some(spec),
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
    let thread_id = client
        .create_thread(authed(
            runs::CreateThreadRequest {
                agent_id,
                title: "hostile".into(),
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
    Bench {
        _db: db,
        server,
        model,
        client,
        token,
        thread_id,
    }
}

impl Bench {
    /// Starts a run with `input`; the refusal when it is refused.
    pub async fn start(
        &mut self,
        input: runs::execute_run_request::Input,
    ) -> Result<Vec<runs::ExecuteRunResponse>, Status> {
        let request = runs::ExecuteRunRequest {
            thread_id: self.thread_id.clone(),
            input: Some(input),
            ..Default::default()
        };
        let stream = self
            .client
            .execute_run(authed(request, &self.token))
            .await?
            .into_inner();
        // Generous: every limit these tests set is far shorter.
        Ok(tokio::time::timeout(
            Duration::from_secs(60),
            stream.map(|event| event.expect("an event")).collect(),
        )
        .await
        .expect("the run ends within a minute"))
    }

    /// Runs the agent on `text` to its end.
    pub async fn say(&mut self, text: &str) -> Vec<runs::ExecuteRunResponse> {
        self.start(user_message(text))
            .await
            .expect("the run starts")
    }

    /// The run as GetRun returns it.
    pub async fn get_run(&mut self, id: &str) -> runs::Run {
        self.client
            .get_run(authed(runs::GetRunRequest { id: id.into() }, &self.token))
            .await
            .expect("the run")
            .into_inner()
            .run
            .expect("a run")
    }

    /// Every message of the thread.
    pub async fn messages(&mut self) -> Vec<runs::Message> {
        self.client
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

    pub async fn stop(self) {
        self.server.stop().await.expect("a clean stop");
        self.model.shutdown().await;
    }
}

pub fn user_message(text: &str) -> runs::execute_run_request::Input {
    runs::execute_run_request::Input::UserMessage(runs::UserMessageInput { text: text.into() })
}

/// The run and error of a stream that ended with `run_failed`.
pub fn failure(events: &[runs::ExecuteRunResponse]) -> (runs::Run, String) {
    match events.last().and_then(|event| event.event.clone()) {
        Some(Event::RunFailed(failed)) => (failed.run.expect("a run"), failed.error),
        other => panic!("the run did not fail; it ended with {other:?}"),
    }
}

/// The run of a stream that ended with `run_completed`.
pub fn completed(events: &[runs::ExecuteRunResponse]) -> runs::Run {
    match events.last().and_then(|event| event.event.clone()) {
        Some(Event::RunCompleted(done)) => done.run.expect("a run"),
        other => panic!("the run did not complete; it ended with {other:?}"),
    }
}

/// The fields a BadRequest detail names, asserting the code is
/// INVALID_ARGUMENT.
pub fn bad_fields(status: &Status) -> Vec<String> {
    use tonic_types::StatusExt as _;
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    status
        .get_error_details()
        .bad_request()
        .expect("a BadRequest detail")
        .field_violations
        .iter()
        .map(|violation| violation.field.clone())
        .collect()
}
