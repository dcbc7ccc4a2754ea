//! Both services, the example MCP server and a scripted model on loopback,
//! and the `switchboard` binary pointed at them.

use std::{process::Output, time::Duration};

use switchboard_example_mcp_server::{
    HttpServerOptions, OAuthRealm, RunningHttpServer, spawn_http,
};
use switchboard_mcp_service::ElicitationPolicy;
use switchboard_scripted_model::{ScriptedModel, Turn};
use switchboard_server::RunningServer;
use switchboard_test_support::{TEST_JWT_SECRET, TestDb, token};

/// The organization of the tests' tokens.
pub const ORG: &str = "org-cli";

/// A running Switchboard.
pub struct World {
    _mcp_db: TestDb,
    _runs_db: TestDb,
    _mcp: RunningServer,
    _runs: RunningServer,
    _model: ScriptedModel,
    /// The example MCP server.
    pub upstream: RunningHttpServer,
    /// mcp-service's URL.
    pub mcp_url: String,
    /// runs-service's URL.
    pub runs_url: String,
    /// An admin token of [`ORG`].
    pub token: String,
    /// A home directory without a config file.
    pub home: tempfile::TempDir,
}

/// How the example server and mcp-service behave.
#[derive(Debug, Default)]
pub struct Setup {
    /// The example server speaks 2026-07-28 and lists its `confirm` tool,
    /// and mcp-service passes servers' questions to the caller.
    pub questions_to_caller: bool,
    /// The example server's MCP endpoint requires tokens of this realm.
    pub oauth: Option<OAuthRealm>,
}

impl World {
    /// Starts everything; the model answers `turns` in order.
    pub async fn start(turns: Vec<Turn>) -> Self {
        Self::start_with(turns, Setup::default()).await
    }

    /// Starts everything as `setup` says; the model answers `turns` in order.
    pub async fn start_with(turns: Vec<Turn>, setup: Setup) -> Self {
        let upstream = spawn_http(HttpServerOptions {
            stateful: !setup.questions_to_caller,
            confirm_tool: setup.questions_to_caller,
            oauth: setup.oauth,
            ..HttpServerOptions::default()
        })
        .await
        .expect("the example server starts");
        let mcp_db = TestDb::sqlite().expect("a database");
        let mut mcp_config =
            switchboard_mcp_service::Config::for_tests(&mcp_db.url, TEST_JWT_SECRET);
        if setup.questions_to_caller {
            mcp_config.elicitation = ElicitationPolicy::Caller;
        }
        let mcp = switchboard_mcp_service::spawn(mcp_config)
            .await
            .expect("mcp-service starts");
        let model = ScriptedModel::start(turns)
            .await
            .expect("the scripted model starts");
        let runs_db = TestDb::sqlite().expect("a database");
        let mut config =
            switchboard_runs_service::Config::for_tests(&runs_db.url, TEST_JWT_SECRET, &mcp.url());
        config.model_providers = format!("scripted=openai,{}", model.base_url());
        config.discovery_timeout = Duration::from_secs(5);
        let runs = switchboard_runs_service::spawn(config)
            .await
            .expect("runs-service starts");
        Self {
            mcp_url: mcp.url(),
            runs_url: runs.url(),
            _mcp_db: mcp_db,
            _runs_db: runs_db,
            _mcp: mcp,
            _runs: runs,
            _model: model,
            upstream,
            token: token(ORG, "user-cli", &["admin"]),
            home: tempfile::tempdir().expect("a temporary home"),
        }
    }

    /// The environment that points the CLI at this world.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SWITCHBOARD_MCP_ADDR", self.mcp_url.clone()),
            ("SWITCHBOARD_RUNS_ADDR", self.runs_url.clone()),
            ("SWITCHBOARD_TOKEN", self.token.clone()),
            ("HOME", self.home.path().display().to_string()),
            ("XDG_CONFIG_HOME", self.home.path().display().to_string()),
            ("NO_COLOR", "1".into()),
        ]
    }

    /// Runs `switchboard ARGS` with `stdin` and waits for it.
    pub async fn run_with_input(&self, args: &[&str], stdin: &str) -> Output {
        use tokio::io::AsyncWriteExt as _;

        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
        command
            .args(args)
            .env_clear()
            .envs(self.env())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("the CLI starts");
        let mut input = child.stdin.take().expect("stdin is piped");
        input
            .write_all(stdin.as_bytes())
            .await
            .expect("the CLI reads its input");
        drop(input);
        child.wait_with_output().await.expect("the CLI ends")
    }

    /// Runs `switchboard ARGS` with empty input.
    pub async fn run(&self, args: &[&str]) -> Output {
        self.run_with_input(args, "").await
    }

    /// Runs `switchboard ARGS`, which must succeed, and returns its stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(
            output.status.success(),
            "switchboard {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8 output")
    }

    /// Runs `switchboard --json ARGS` and parses its output.
    pub async fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let stdout = self.ok(&all).await;
        serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("{args:?} printed no JSON ({error}): {stdout}"))
    }

    /// Registers the example server (slug `example`) and creates an agent
    /// named `assistant` using it with `extra` arguments; returns the
    /// integration's and the agent's ids.
    pub async fn agent(&self, extra: &[&str]) -> (String, String) {
        let url = self.upstream.url();
        let integration = self
            .json(&["integrations", "create", "--slug", "example", "--url", &url])
            .await;
        let mut args = vec![
            "agents",
            "create",
            "--name",
            "assistant",
            "--provider",
            "scripted",
            "--model",
            "test-model",
            "--integration",
            "example",
        ];
        args.extend_from_slice(extra);
        let agent = self.json(&args).await;
        (id(&integration), id(&agent))
    }
}

/// The `id` field of a printed object.
pub fn id(json: &serde_json::Value) -> String {
    json["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {json}"))
        .to_owned()
}
