//! One suite over every transport: the real MCP client, reached through
//! mcp-service's gRPC API, held to the same behaviour whether its server is
//! a child process (stdio) or at a URL (streamable HTTP). Each case is
//! written once, in terms of what any transport must do, and
//! [`transport_suite!`] runs it over each; what differs between transports
//! (how a server is started, broken, counted) is in [`Upstream`].

mod front;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use switchboard_example_mcp_server::{
    CALL_LOG_ENV, DROP_CONNECTION_TOOL, HttpServerOptions, RunningHttpServer, spawn_http,
};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, ToolFailureReason as Reason, content_block::Block},
};
use switchboard_test_support::{DbKind, workspace_binary};

use self::front::Front;
use crate::support::{Harness, admin, create, http_integration, req, start_with, validate};

/// Runs each named case over every transport: `stdio::case` and
/// `streamable_http::case`, each calling `case(Transport::…)`.
macro_rules! transport_suite {
    ($($case:ident),* $(,)?) => {
        mod stdio {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Transport::Stdio).await;
                }
            )*
        }
        mod streamable_http {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Transport::StreamableHttp).await;
                }
            )*
        }
    };
}

const MIB: usize = 1024 * 1024;

/// Room for a busy machine in every wait.
const PATIENCE: Duration = Duration::from_secs(15);

/// The transport a case runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    StreamableHttp,
}

/// How a case wants its server.
#[derive(Debug, Clone, Copy, Default)]
struct Options {
    /// The integration's call limit (the service's default when `None`).
    call_timeout: Option<Duration>,
    /// A stdio server whose output outlives it: a helper started beside it
    /// holds its stdout open, so that once the server dies its stdin is
    /// closed while the session still looks open.
    output_outlives_server: bool,
}

/// The server of a case, as its transport reaches it.
enum Upstream {
    Http {
        server: RunningHttpServer,
        front: Front,
    },
    Stdio {
        /// Each tool call's name, one a line, appended by every process.
        log: PathBuf,
        /// Where the sessions' private homes are made.
        homes: PathBuf,
        _dir: tempfile::TempDir,
    },
}

struct Setup {
    h: Harness,
    id: String,
    token: String,
    upstream: Upstream,
}

fn example_server() -> String {
    workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string()
}

/// A script starting the example server with a helper that keeps its
/// stdout open (a background `sleep`, its stdin from `/dev/null`).
fn outliving_output_script(dir: &Path) -> String {
    let sleep = ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("a sleep program");
    let script = dir.join("outliving-output.sh");
    let text = format!(
        "#!/bin/sh\n{sleep} 600 </dev/null &\nexec {} --transport stdio\n",
        example_server()
    );
    std::fs::write(&script, text).expect("the script is written");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("the script is executable");
    script.display().to_string()
}

fn with_call_timeout(
    mut request: pb::CreateIntegrationRequest,
    options: Options,
) -> pb::CreateIntegrationRequest {
    request.timeouts = options.call_timeout.map(|t| pb::Timeouts {
        connect: None,
        call: Some(prost_types::Duration {
            seconds: i64::try_from(t.as_secs()).expect("small"),
            nanos: 0,
        }),
    });
    request
}

async fn setup(transport: Transport, options: Options) -> Setup {
    let token = admin("org-a");
    match transport {
        Transport::StreamableHttp => {
            let server = spawn_http(HttpServerOptions {
                // A dropped connection loses the answer for good.
                resumable: false,
                ..HttpServerOptions::default()
            })
            .await
            .expect("upstream");
            let front = Front::start(server.addr).await;
            let mut h = start_with(DbKind::Sqlite, |_| {}).await;
            let request = with_call_timeout(http_integration("example", &front.url()), options);
            let id = create(&mut h, &token, request).await.id;
            let upstream = Upstream::Http { server, front };
            Setup {
                h,
                id,
                token,
                upstream,
            }
        }
        Transport::Stdio => {
            let dir = tempfile::tempdir().expect("a temp dir");
            let (log, homes) = (dir.path().join("calls.log"), dir.path().join("homes"));
            let command = if options.output_outlives_server {
                outliving_output_script(dir.path())
            } else {
                example_server()
            };
            let args: Vec<String> = if options.output_outlives_server {
                vec![]
            } else {
                vec!["--transport".into(), "stdio".into()]
            };
            let allowed = format!("{command} {} env={CALL_LOG_ENV}", args.join(" "));
            let home_root = homes.display().to_string();
            let mut h = start_with(DbKind::Sqlite, move |config| {
                config.stdio_allow = allowed;
                config.stdio_home_root = home_root;
            })
            .await;
            let mut request = http_integration("local", "http://unused");
            request.source = Some(pb::create_integration_request::Source::Custom(
                pb::CustomIntegrationSpec {
                    transport: Some(pb::Transport {
                        kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                            command,
                            args,
                            env: [(CALL_LOG_ENV.to_owned(), log.display().to_string())].into(),
                            secret_env: Default::default(),
                            secret_env_names: vec![],
                        })),
                    }),
                    auth: None,
                },
            ));
            let id = create(&mut h, &token, with_call_timeout(request, options))
                .await
                .id;
            let upstream = Upstream::Stdio {
                log,
                homes,
                _dir: dir,
            };
            Setup {
                h,
                id,
                token,
                upstream,
            }
        }
    }
}

impl Setup {
    async fn execute(&mut self, tool: &str, arguments: Value) -> pb::ExecuteToolResponse {
        self.h
            .client
            .execute_tool(req(
                pb::ExecuteToolRequest {
                    integration_id: self.id.clone(),
                    tool_name: tool.into(),
                    arguments: json_to_struct(&arguments),
                    session_scope: "t".into(),
                    ..Default::default()
                },
                &self.token,
            ))
            .await
            .expect("answered")
            .into_inner()
    }

    /// The text of a successful call of `tool`.
    async fn text(&mut self, tool: &str, arguments: Value) -> String {
        let response = self.execute(tool, arguments).await;
        assert!(!response.is_error, "{tool}: {response:?}");
        match response.content.first().and_then(|b| b.block.as_ref()) {
            Some(Block::Text(t)) => t.text.clone(),
            other => panic!("{tool}: a text block, not {other:?}"),
        }
    }

    /// Tool calls the server received, whatever came of them.
    fn tool_runs(&self) -> usize {
        match &self.upstream {
            Upstream::Http { server, .. } => {
                usize::try_from(server.stats.snapshot().tool_calls).expect("small")
            }
            Upstream::Stdio { log, .. } => std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .count(),
        }
    }

    /// Calls the server saw cancelled, as its session's `stats` tool says.
    async fn cancellations(&mut self) -> u64 {
        let stats: Value =
            serde_json::from_str(&self.text("stats", json!({})).await).expect("stats as JSON");
        stats["cancellations"].as_u64().expect("a count")
    }

    /// The process id of the session's stdio server.
    async fn pid(&mut self) -> u32 {
        let process: Value = serde_json::from_str(&self.text("process", json!({})).await)
            .expect("the process as JSON");
        u32::try_from(process["pid"].as_u64().expect("a pid")).expect("a pid")
    }

    async fn delete(&mut self) {
        self.h
            .client
            .delete_integration(req(
                pb::DeleteIntegrationRequest {
                    id: self.id.clone(),
                },
                &self.token,
            ))
            .await
            .expect("deleted");
    }
}

/// Whether process `pid` has ended (gone, or a zombie awaiting its reaper).
fn ended(pid: u32) -> bool {
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    state.is_empty() || state.split_whitespace().nth(2) == Some("Z")
}

/// Whether every process of group `pgid` has ended.
fn group_ended(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().all(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // After the command's closing parenthesis: state, parent, group.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        fields.get(2) != Some(&pgid.to_string().as_str()) || fields.first() == Some(&"Z")
    })
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_session_opens_and_lists_the_servers_tools(transport: Transport) {
    let mut s = setup(transport, Options::default()).await;
    let report = validate(&mut s.h, &s.token.clone(), &s.id.clone()).await;
    assert!(report.ok, "{}", report.error);
    assert!(report.tool_count >= 3, "{report:?}");
}

async fn a_call_reaches_the_server_once_and_its_answer_comes_back(transport: Transport) {
    let mut s = setup(transport, Options::default()).await;
    assert_eq!(s.text("echo", json!({"text": "hello"})).await, "hello");
    assert_eq!(s.tool_runs(), 1);
    assert_eq!(s.text("counter", json!({})).await, "1");
    assert_eq!(s.text("counter", json!({})).await, "2", "one session");
}

async fn an_oversized_answer_is_too_large_the_tool_ran_once_and_the_session_stays(
    transport: Transport,
) {
    let mut s = setup(transport, Options::default()).await;
    assert_eq!(s.text("counter", json!({})).await, "1");
    // Over the result cap, and over the transport's own bound (twice the
    // cap), which cuts the answer off as it streams in.
    for bytes in [5 * MIB, 9 * MIB] {
        let before = s.tool_runs();
        let response = s.execute("big", json!({ "bytes": bytes })).await;
        assert!(response.is_error);
        assert_eq!(response.failure_reason(), Reason::ResultTooLarge, "{bytes}");
        assert!(
            response.error_message.contains("larger than 4 MiB"),
            "{bytes}: {}",
            response.error_message
        );
        assert_eq!(s.tool_runs(), before + 1, "{bytes}: the tool ran once");
    }
    assert_eq!(
        s.text("counter", json!({})).await,
        "2",
        "the session stayed"
    );
}

/// A request that provably never left (the connection could not be opened;
/// the stdio server's input was closed) is made once more on a new
/// session: a new process runs it; an HTTP server still down refuses the
/// new session too, and the call says the server is unreachable rather
/// than that a connection was lost.
async fn a_request_that_never_left_is_made_again_on_a_new_session(transport: Transport) {
    let options = Options {
        output_outlives_server: true,
        ..Options::default()
    };
    let mut s = setup(transport, options).await;
    match transport {
        Transport::Stdio => {
            let pid = s.pid().await;
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .expect("kill runs");
            assert!(killed.success());
            eventually("the server died", || ended(pid)).await;
            assert_eq!(s.text("echo", json!({"text": "again"})).await, "again");
            assert_ne!(s.pid().await, pid, "a new process");
            let Upstream::Stdio { log, .. } = &s.upstream else {
                unreachable!("a stdio setup")
            };
            let calls = std::fs::read_to_string(log).expect("the log");
            assert_eq!(calls, "process\necho\nprocess\n", "each call ran once");
        }
        Transport::StreamableHttp => {
            assert_eq!(s.text("echo", json!({"text": "before"})).await, "before");
            let Upstream::Http { front, .. } = &s.upstream else {
                unreachable!("an HTTP setup")
            };
            front.stop();
            let response = s.execute("echo", json!({"text": "lost"})).await;
            assert!(response.is_error);
            assert_eq!(
                response.failure_reason(),
                Reason::ServerUnreachable,
                "made again on a new session, which could not connect: {response:?}"
            );
            assert_eq!(s.tool_runs(), 1, "nothing reached the server");
            let Upstream::Http { front, .. } = &s.upstream else {
                unreachable!("an HTTP setup")
            };
            front.listen().await;
            assert_eq!(s.text("echo", json!({"text": "after"})).await, "after");
        }
    }
}

async fn a_request_lost_after_it_left_is_not_made_again(transport: Transport) {
    let mut s = setup(transport, Options::default()).await;
    let response = s.execute(DROP_CONNECTION_TOOL, json!({})).await;
    assert!(response.is_error);
    assert_eq!(
        response.failure_reason(),
        Reason::ConnectionLost,
        "{response:?}"
    );
    assert!(
        response.error_message.contains("was not repeated"),
        "{}",
        response.error_message
    );
    assert_eq!(s.tool_runs(), 1, "the tool ran exactly once");
    assert_eq!(s.text("echo", json!({"text": "on"})).await, "on");
}

async fn a_call_past_its_limit_is_cancelled_at_the_server(transport: Transport) {
    let options = Options {
        call_timeout: Some(Duration::from_secs(1)),
        ..Options::default()
    };
    let mut s = setup(transport, options).await;
    let started = Instant::now();
    let response = s.execute("sleep", json!({"ms": 20_000})).await;
    assert!(response.is_error);
    assert_eq!(response.failure_reason(), Reason::Timeout, "{response:?}");
    // Well before the tool's 20 s.
    assert!(started.elapsed() < Duration::from_secs(10));
    // Asked on the same session (for stdio, of the same process).
    let deadline = Instant::now() + PATIENCE;
    while s.cancellations().await == 0 {
        assert!(
            Instant::now() < deadline,
            "the server never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Closing a session frees what its transport held: a stdio server's whole
/// process group (here a helper it started, which would outlive a server
/// that ends by itself on its closed input) and home; an HTTP session's
/// connections.
async fn closing_the_session_frees_everything(transport: Transport) {
    let options = Options {
        output_outlives_server: true,
        ..Options::default()
    };
    let mut s = setup(transport, options).await;
    assert_eq!(s.text("echo", json!({"text": "x"})).await, "x");
    let pid = match transport {
        Transport::Stdio => Some(s.pid().await),
        Transport::StreamableHttp => None,
    };
    s.delete().await;
    match &s.upstream {
        Upstream::Stdio { homes, .. } => {
            let pid = pid.expect("a stdio server's pid");
            eventually(
                "the stdio server's process group ended with its session",
                || group_ended(pid),
            )
            .await;
            eventually("the session's home was removed", || {
                std::fs::read_dir(homes).map_or(true, |mut entries| entries.next().is_none())
            })
            .await;
        }
        Upstream::Http { front, .. } => {
            eventually("every connection to the server was closed", || {
                front.open() == 0
            })
            .await;
        }
    }
}

transport_suite!(
    a_session_opens_and_lists_the_servers_tools,
    a_call_reaches_the_server_once_and_its_answer_comes_back,
    an_oversized_answer_is_too_large_the_tool_ran_once_and_the_session_stays,
    a_request_that_never_left_is_made_again_on_a_new_session,
    a_request_lost_after_it_left_is_not_made_again,
    a_call_past_its_limit_is_cancelled_at_the_server,
    closing_the_session_frees_everything,
);
