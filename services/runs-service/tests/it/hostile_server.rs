//! Hostile use of the shared server stack, as runs-service sees it: streams
//! (WatchRun, ExecuteRun) hold their organization's slot and one of the
//! process's until they end, runs in flight are capped
//! per organization and per user, and the watchers of one run share one
//! storage poll. Real gRPC on loopback, the real scripted model server, on
//! both databases.

use std::time::{Duration, Instant};

use futures::{StreamExt as _, future::join_all};
use switchboard_proto::runs::v1::{self as runs, runs_service_client::RunsServiceClient};
use switchboard_runs_service::Config;
use switchboard_scripted_model::{ScriptedModel, Turn};
use switchboard_server::RunningServer;
use switchboard_test_support::{DbKind, TEST_JWT_SECRET, TestDb, authed, db_tests, token};
use tonic::{Code, Status, Streaming, transport::Channel};
use tonic_types::StatusExt as _;

use crate::{counting::Reads, hostile_model::user_message};

const ORG: &str = "org-streams";

/// Loose bound for "it happened": never reached unless something is wrong.
const EVENTUALLY: Duration = Duration::from_secs(20);

/// runs-service whose model keeps every run going for longer than a test,
/// with one agent of [`ORG`].
struct Service {
    _db: TestDb,
    server: RunningServer,
    model: ScriptedModel,
    client: RunsServiceClient<Channel>,
    agent_id: String,
}

async fn start(kind: DbKind, tune: impl FnOnce(&mut Config), reads: Option<Reads>) -> Service {
    let db = TestDb::new(kind).await.expect("a test database");
    let slow = Turn::Delay(
        Duration::from_secs(600),
        Box::new(Turn::Text("late".into())),
    );
    let model = ScriptedModel::start(vec![slow; 32])
        .await
        .expect("scripted model");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET, "http://127.0.0.1:1");
    config.model_providers = format!("scripted=openai,{}", model.base_url());
    tune(&mut config);
    let server = match reads {
        Some(reads) => {
            switchboard_runs_service::spawn_wrapped(config, move |repo| reads.wrap(repo)).await
        }
        None => switchboard_runs_service::spawn(config).await,
    }
    .expect("runs-service starts");
    let mut client = RunsServiceClient::connect(server.url())
        .await
        .expect("connects");
    let agent = runs::Agent {
        name: "slow".into(),
        model: Some(runs::ModelRef {
            provider: "scripted".into(),
            model: "test-model".into(),
        }),
        ..Default::default()
    };
    let request = runs::CreateAgentRequest {
        agent: Some(agent),
        ..Default::default()
    };
    let agent_id = client
        .create_agent(authed(request, &token(ORG, "admin", &["admin"])))
        .await
        .expect("agent created")
        .into_inner()
        .agent
        .expect("an agent")
        .id;
    Service {
        _db: db,
        server,
        model,
        client,
        agent_id,
    }
}

impl Service {
    /// A new thread of `user`, with the user's token.
    async fn thread(&mut self, user: &str) -> (String, String) {
        let token = token(ORG, user, &[]);
        let request = runs::CreateThreadRequest {
            agent_id: self.agent_id.clone(),
            title: "slow".into(),
            ..Default::default()
        };
        let thread = self
            .client
            .create_thread(authed(request, &token))
            .await
            .expect("thread created")
            .into_inner()
            .thread
            .expect("a thread");
        (token, thread.id)
    }

    /// Starts a run on `thread_id`: its id and its open stream, or the
    /// refusal.
    async fn run(
        &mut self,
        token: &str,
        thread_id: &str,
        detached: bool,
    ) -> Result<(String, Streaming<runs::ExecuteRunResponse>), Status> {
        let request = runs::ExecuteRunRequest {
            thread_id: thread_id.into(),
            input: Some(user_message("go")),
            detach_on_disconnect: detached,
            ..Default::default()
        };
        let mut stream = self
            .client
            .execute_run(authed(request, token))
            .await?
            .into_inner();
        let first = stream
            .next()
            .await
            .expect("a first event")
            .expect("the run started");
        let Some(runs::execute_run_response::Event::RunStarted(started)) = first.event else {
            panic!("the first event is not run_started: {first:?}");
        };
        Ok((started.run.expect("a run").id, stream))
    }

    /// Opens a WatchRun stream of `run_id`, or the refusal.
    async fn watch(
        &self,
        token: &str,
        run_id: &str,
    ) -> Result<Streaming<runs::WatchRunResponse>, Status> {
        let request = runs::WatchRunRequest {
            id: run_id.into(),
            from_sequence: 0,
        };
        Ok(self
            .client
            .clone()
            .watch_run(authed(request, token))
            .await?
            .into_inner())
    }

    async fn stop(self) {
        self.server.stop().await.expect("a clean stop");
        self.model.shutdown().await;
    }
}

/// The reason of a refusal, asserting RESOURCE_EXHAUSTED with a retry delay.
fn exhausted_reason(status: &Status) -> String {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status.get_error_details();
    assert!(details.retry_info().is_some(), "a RetryInfo: {status:?}");
    details.error_info().expect("an ErrorInfo").reason.clone()
}

/// A detached run of a new thread, its stream closed: it goes on without
/// holding a call slot.
async fn detached_run(service: &mut Service) -> (String, String) {
    let (token, thread_id) = service.thread("watcher").await;
    let (run_id, stream) = service
        .run(&token, &thread_id, true)
        .await
        .expect("the run starts");
    drop(stream);
    (token, run_id)
}

/// Opens WatchRun streams until one is admitted; the time it takes a
/// closed stream's slot to be given back is not the test's business.
async fn admitted_watch(
    service: &Service,
    token: &str,
    run_id: &str,
) -> Streaming<runs::WatchRunResponse> {
    let started = Instant::now();
    loop {
        match service.watch(token, run_id).await {
            Ok(stream) => return stream,
            Err(status) if started.elapsed() < EVENTUALLY => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => panic!("no slot came free: {status:?}"),
        }
    }
}

async fn watch_streams_hold_their_organization_slot_until_they_end(kind: DbKind) {
    let mut service = start(
        kind,
        |config| {
            config.common.server.org_concurrency_limit = 5;
            config.common.server.org_queue_wait = Duration::from_millis(300);
        },
        None,
    )
    .await;
    let (token, run_id) = detached_run(&mut service).await;
    // Sixty at once: the run never ends, so no stream does.
    let attempts = join_all((0..60).map(|_| service.watch(&token, &run_id))).await;
    let (mut open, refused): (Vec<_>, Vec<_>) = attempts.into_iter().partition(Result::is_ok);
    assert!(
        open.len() <= 5,
        "{} of 60 streams were admitted under a limit of 5",
        open.len()
    );
    for status in refused.into_iter().filter_map(Result::err) {
        assert_eq!(
            exhausted_reason(&status),
            "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT"
        );
    }
    // The run's own stream may have held a slot a moment longer: fill up.
    while open.len() < 5 {
        open.push(Ok(admitted_watch(&service, &token, &run_id).await));
    }
    let mut open: Vec<_> = open
        .into_iter()
        .map(|stream| stream.expect("open"))
        .collect();
    // Each open stream is live: it carries the run's first event.
    for stream in &mut open {
        let event = stream
            .next()
            .await
            .expect("an event")
            .expect("not an error");
        assert!(event.event.is_some());
    }
    let status = service
        .watch(&token, &run_id)
        .await
        .expect_err("a sixth stream");
    assert_eq!(
        exhausted_reason(&status),
        "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT"
    );
    // A stream that ends gives its slot back.
    drop(open.pop());
    open.push(admitted_watch(&service, &token, &run_id).await);
    assert_eq!(open.len(), 5);
    drop(open);
    service.stop().await;
}

/// Opens two runs under limits `tune` sets to two streams, and checks that
/// a third stream, a run's or a watch's, is refused as `refused` says
/// until one of the runs' streams ends.
async fn two_run_streams_fill(kind: DbKind, tune: impl FnOnce(&mut Config), refused: fn(&Status)) {
    let mut service = start(kind, tune, None).await;
    let mut threads = Vec::new();
    for _ in 0..3 {
        threads.push(service.thread("runner").await);
    }
    let mut open = Vec::new();
    for (token, thread_id) in &threads[..2] {
        open.push(
            service
                .run(token, thread_id, false)
                .await
                .expect("within the limit"),
        );
    }
    let (token, third) = &threads[2];
    refused(
        &service
            .run(token, third, false)
            .await
            .expect_err("a third stream"),
    );
    refused(
        &service
            .watch(token, &open[0].0)
            .await
            .expect_err("a watch beside two runs"),
    );
    // A run's stream that ends gives its slot back.
    drop(open.pop());
    let started = Instant::now();
    loop {
        match service.run(token, third, false).await {
            Ok(run) => {
                open.push(run);
                break;
            }
            Err(status) if started.elapsed() < EVENTUALLY => {
                refused(&status);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => panic!("no slot came free: {status:?}"),
        }
    }
    drop(open);
    service.stop().await;
}

async fn run_streams_hold_their_organization_slot_until_they_end(kind: DbKind) {
    let tune = |config: &mut Config| {
        config.common.server.org_concurrency_limit = 2;
        config.common.server.org_queue_wait = Duration::from_millis(300);
    };
    two_run_streams_fill(kind, tune, |status| {
        assert_eq!(
            exhausted_reason(status),
            "ERROR_REASON_ORGANIZATION_CONCURRENCY_LIMIT"
        );
    })
    .await;
}

async fn run_streams_hold_a_slot_of_the_process_until_they_end(kind: DbKind) {
    let tune = |config: &mut Config| config.common.server.concurrency_limit = 2;
    two_run_streams_fill(kind, tune, |status| {
        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    })
    .await;
}

async fn runs_past_the_limits_of_their_user_and_organization_are_refused(kind: DbKind) {
    let mut service = start(
        kind,
        |config| {
            config.run_limits.max_runs_per_org = 3;
            config.run_limits.max_runs_per_user = 2;
        },
        None,
    )
    .await;
    let mut running = Vec::new();
    for _ in 0..2 {
        let (token, thread) = service.thread("ann").await;
        running.push(
            service
                .run(&token, &thread, false)
                .await
                .expect("within the limits"),
        );
    }
    let (ann, ann_third) = service.thread("ann").await;
    let status = service
        .run(&ann, &ann_third, false)
        .await
        .expect_err("a third run of ann");
    assert_eq!(exhausted_reason(&status), "ERROR_REASON_RUN_LIMIT");
    assert!(status.message().contains("you have 2 runs"), "{status:?}");
    // Detached runs count too: leaving the stream does not free a place.
    let (bob, bob_first) = service.thread("bob").await;
    let (_, stream) = service
        .run(&bob, &bob_first, true)
        .await
        .expect("the organization's third");
    drop(stream);
    let (bob, bob_second) = service.thread("bob").await;
    let status = service
        .run(&bob, &bob_second, false)
        .await
        .expect_err("a fourth run");
    assert_eq!(exhausted_reason(&status), "ERROR_REASON_RUN_LIMIT");
    assert!(
        status.message().contains("organization has 3 runs"),
        "{status:?}"
    );
    // A run that ends (its client left) gives its place back.
    drop(running.pop());
    let started = Instant::now();
    loop {
        match service.run(&bob, &bob_second, false).await {
            Ok(run) => {
                running.push(run);
                break;
            }
            Err(status) if started.elapsed() < EVENTUALLY => {
                assert_eq!(exhausted_reason(&status), "ERROR_REASON_RUN_LIMIT");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => panic!("no place came free: {status:?}"),
        }
    }
    drop(running);
    service.stop().await;
}

async fn the_watchers_of_one_run_share_one_storage_poll(kind: DbKind) {
    const WATCHERS: usize = 20;
    let poll = Duration::from_millis(50);
    let reads = Reads::default();
    let mut service = start(
        kind,
        |config| config.replicas.run_watch_poll_interval = poll,
        Some(reads.clone()),
    )
    .await;
    let (token, run_id) = detached_run(&mut service).await;
    let mut open = Vec::new();
    for _ in 0..WATCHERS {
        let mut stream = service.watch(&token, &run_id).await.expect("admitted");
        // Caught up: the run's first event arrived.
        stream
            .next()
            .await
            .expect("an event")
            .expect("not an error");
        open.push(stream);
    }
    let before = reads.of(&run_id);
    let window = Instant::now();
    tokio::time::sleep(poll * 20).await;
    let polled = reads.of(&run_id) - before;
    // A poll reads the run's events and the run: two reads per interval
    // for the one loop, however many watch. (One loop per watcher would be
    // twenty times as many.)
    let intervals = window.elapsed().as_millis() / poll.as_millis() + 1;
    let one_loop = usize::try_from(2 * intervals).expect("a small number");
    assert!(
        polled <= one_loop,
        "{WATCHERS} watchers made {polled} reads in {intervals} intervals; one poll loop makes at most {one_loop}"
    );
    assert!(polled > 0, "the run is still followed");
    // The last watcher's leaving stops the loop.
    drop(open);
    let started = Instant::now();
    loop {
        let before = reads.of(&run_id);
        tokio::time::sleep(poll * 4).await;
        if reads.of(&run_id) == before {
            break;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "the poll loop never stopped"
        );
    }
    service.stop().await;
}

db_tests!(
    watch_streams_hold_their_organization_slot_until_they_end,
    run_streams_hold_their_organization_slot_until_they_end,
    run_streams_hold_a_slot_of_the_process_until_they_end,
    runs_past_the_limits_of_their_user_and_organization_are_refused,
    the_watchers_of_one_run_share_one_storage_poll,
);

#[test]
fn help_does_not_print_secret_environment_values() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_runs-service"))
        .arg("--help")
        .env("DATABASE_URL", "postgres://sb:hunter2-db@db.internal/sb")
        .env("SWITCHBOARD_JWT_SECRET", "hunter2-jwt-secret-0123456789")
        .env(
            "SWITCHBOARD_MODEL_PROVIDERS",
            "local=openai,https://user:hunter2-model@models.internal/v1",
        )
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://user:hunter2-otel@collector:4317",
        )
        .output()
        .expect("the binary runs");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("DATABASE_URL"), "{help}");
    assert!(!help.contains("hunter2"), "{help}");
}
