//! Hostile stdio integrations: an admin who would run code of their choosing
//! with mcp-service's privileges through the environment or the arguments
//! of an allow-listed program, or read the service's secrets from the child.

use std::time::Duration;

use switchboard_mcp_service::Config;
use switchboard_proto::mcp::v1::{self as pb, content_block::Block};
use switchboard_test_support::{DbKind, TEST_JWT_SECRET, TestDb, db_tests, workspace_binary};

use crate::support::{Harness, admin, bad_fields, create, http_integration, req, start_with};

fn example_server() -> String {
    workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string()
}

/// The allow-list entry the tests run under: the example server over stdio
/// with `API_KEY` and `PLAIN` in its environment.
fn allow_entry() -> String {
    format!("{} --transport stdio env=API_KEY|PLAIN", example_server())
}

fn stdio_request(
    args: &[&str],
    env: &[(&str, &str)],
    secret_env: &[(&str, &str)],
) -> pb::CreateIntegrationRequest {
    let pairs = |items: &[(&str, &str)]| {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let mut request = http_integration("local", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: example_server(),
                    args: args.iter().map(|a| (*a).to_owned()).collect(),
                    env: pairs(env),
                    secret_env: pairs(secret_env),
                    secret_env_names: vec![],
                })),
            }),
            auth: None,
        },
    ));
    request
}

async fn refused_fields(h: &mut Harness, request: pb::CreateIntegrationRequest) -> Vec<String> {
    let status = h
        .client
        .create_integration(req(request, &admin("org-a")))
        .await
        .expect_err("refused");
    bad_fields(&status)
}

const STDIO_ARGS: &[&str] = &["--transport", "stdio"];

async fn a_stdio_integration_with_node_options_or_ld_preload_is_refused(kind: DbKind) {
    let entry = allow_entry();
    let mut h = start_with(kind, move |config| config.stdio_allow = entry).await;
    let field = "custom.transport.stdio";
    for name in [
        "NODE_OPTIONS",
        "LD_PRELOAD",
        "PATH",
        "PYTHONPATH",
        "LD_AUDIT",
    ] {
        let env = [(name, "--require /proc/self/environ")];
        assert_eq!(
            refused_fields(&mut h, stdio_request(STDIO_ARGS, &env, &[])).await,
            [format!("{field}.env[{name}]")]
        );
        assert_eq!(
            refused_fields(&mut h, stdio_request(STDIO_ARGS, &[], &env)).await,
            [format!("{field}.secret_env[{name}]")]
        );
    }
    // The permitted names still work.
    create(
        &mut h,
        &admin("org-a"),
        stdio_request(STDIO_ARGS, &[("PLAIN", "1")], &[("API_KEY", "k")]),
    )
    .await;
}

async fn an_allow_list_permitting_a_dangerous_name_does_not_load(kind: DbKind) {
    let db = TestDb::new(kind).await.expect("a test database");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    config.stdio_allow = format!("{} env=LD_PRELOAD", example_server());
    let error = switchboard_mcp_service::spawn(config)
        .await
        .map(|_| ())
        .expect_err("the service refuses to start");
    assert!(format!("{error:#}").contains("LD_PRELOAD"), "{error:#}");
}

async fn stdio_arguments_outside_the_permitted_patterns_are_refused(kind: DbKind) {
    let entry = allow_entry();
    let mut h = start_with(kind, move |config| config.stdio_allow = entry).await;
    for args in [
        &["--transport", "http"][..],
        &["--transport", "stdio", "--listen", "0.0.0.0:80"],
        &[],
        &["--transport"],
    ] {
        assert_eq!(
            refused_fields(&mut h, stdio_request(args, &[], &[])).await,
            ["custom.transport.stdio.args"],
            "{args:?}"
        );
    }
    assert_eq!(
        refused_fields(&mut h, stdio_request(STDIO_ARGS, &[("OTHER", "1")], &[])).await,
        ["custom.transport.stdio.env[OTHER]"]
    );
}

async fn a_changed_stdio_command_line_needs_its_secrets_again(kind: DbKind) {
    let entry = format!(
        "{0} --transport stdio env=API_KEY|PLAIN, {0} --transport stdio --name=* env=API_KEY|PLAIN",
        example_server()
    );
    let mut h = start_with(kind, move |config| config.stdio_allow = entry).await;
    let token = admin("org-a");
    let created = create(
        &mut h,
        &token,
        stdio_request(STDIO_ARGS, &[("PLAIN", "1")], &[("API_KEY", "s3cret")]),
    )
    .await;
    let stdio = |args: &[&str], plain: &str, key: &str| {
        Some(pb::Transport {
            kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                command: example_server(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                env: [("PLAIN".to_owned(), plain.to_owned())].into(),
                secret_env: [("API_KEY".to_owned(), key.to_owned())].into(),
                secret_env_names: vec![],
            })),
        })
    };
    let update = |transport: Option<pb::Transport>| pb::UpdateIntegrationRequest {
        integration: Some(pb::Integration {
            id: created.id.clone(),
            transport,
            ..Default::default()
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: vec!["transport".into()],
        }),
    };
    // Other arguments, or another value of a plain variable, may point the
    // program elsewhere: the stored secret is not carried over.
    for moved in [
        stdio(&["--transport", "stdio", "--name=elsewhere"], "1", ""),
        stdio(STDIO_ARGS, "2", ""),
    ] {
        let status = h
            .client
            .update_integration(req(update(moved), &token))
            .await
            .expect_err("a new command line without the secret");
        assert_eq!(
            bad_fields(&status),
            ["integration.transport.stdio.secret_env[API_KEY]"]
        );
    }
    // The same command line keeps it; entering it again allows the move.
    h.client
        .update_integration(req(update(stdio(STDIO_ARGS, "1", "")), &token))
        .await
        .expect("the same destination keeps its secret");
    h.client
        .update_integration(req(
            update(stdio(&["--transport", "stdio", "--name=x"], "1", "n3w")),
            &token,
        ))
        .await
        .expect("the secret entered again");
}

#[tokio::test]
async fn a_stdio_server_sees_none_of_the_services_environment_and_runs_under_limits() {
    let root = tempfile::tempdir().expect("a home root");
    let configured_root = root.path().display().to_string();
    // The file form of the allow-list, as an operator would mount it.
    let mut file = tempfile::NamedTempFile::new().expect("a temp file");
    std::io::Write::write_all(
        &mut file,
        format!(
            "[[program]]\ncommand = {:?}\nargs = [\"--transport\", \"stdio\"]\nenv = [\"API_KEY\", \"PLAIN\"]\n",
            example_server()
        )
        .as_bytes(),
    )
    .expect("written");
    let allow_file = file.path().to_owned();
    let mut h = start_with(DbKind::Sqlite, move |config| {
        config.stdio_allow_file = Some(allow_file);
        config.stdio_path = "/usr/bin:/bin".into();
        config.stdio_home_root = configured_root;
        config.stdio_max_file_bytes = 1 << 20;
        config.stdio_max_open_files = 64;
        config.stdio_max_data_bytes = 1 << 30;
        config.stdio_max_cpu = Duration::from_secs(120);
        config.stdio_max_processes = 2048;
    })
    .await;
    let token = admin("org-a");
    let id = create(
        &mut h,
        &token,
        stdio_request(STDIO_ARGS, &[("PLAIN", "1")], &[("API_KEY", "s3cret")]),
    )
    .await
    .id;
    let response = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id,
                tool_name: "process".into(),
                arguments: None,
                session_scope: String::new(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("answered")
        .into_inner();
    assert!(!response.is_error, "{}", response.error_message);
    let Some(Block::Text(text)) = response.content[0].block.clone() else {
        panic!("text")
    };
    let process: serde_json::Value = serde_json::from_str(&text.text).expect("json");
    let pid = process["pid"].as_u64().expect("a pid");

    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("the child's environment");
    let mut environ: Vec<String> = environ
        .split(|b| *b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| String::from_utf8_lossy(entry).into_owned())
        .collect();
    environ.sort();
    let home = environ
        .iter()
        .find_map(|entry| entry.strip_prefix("HOME="))
        .expect("a home")
        .to_owned();
    assert!(
        std::path::Path::new(&home).starts_with(root.path()) && home.contains("/home-"),
        "{home}"
    );
    let expected: Vec<String> = [
        "API_KEY=s3cret".to_owned(),
        format!("HOME={home}"),
        "PATH=/usr/bin:/bin".to_owned(),
        "PLAIN=1".to_owned(),
        "PYTHONNOUSERSITE=1".to_owned(),
        format!("TMPDIR={home}/tmp"),
        format!("XDG_CACHE_HOME={home}/.cache"),
        format!("XDG_CONFIG_HOME={home}/.config"),
        format!("XDG_DATA_HOME={home}/.local/share"),
        format!("XDG_RUNTIME_DIR={home}/run"),
        format!("XDG_STATE_HOME={home}/.local/state"),
    ]
    .into();
    assert_eq!(
        environ, expected,
        "the integration's environment, a fixed PATH and a private home, nothing of the \
         service's"
    );

    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let limit = |name: &str| -> Vec<String> {
        let line = limits
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {limits}"));
        line[name.len()..]
            .split_whitespace()
            .take(2)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(limit("Max open files"), ["64", "64"]);
    assert_eq!(limit("Max core file size"), ["0", "0"]);
    assert_eq!(limit("Max cpu time"), ["120", "120"]);
    assert_eq!(limit("Max data size"), ["1073741824", "1073741824"]);
    assert_eq!(limit("Max file size"), ["1048576", "1048576"]);
    assert_eq!(limit("Max processes"), ["2048", "2048"]);

    // Children of the same user cannot read the service's /proc files.
    assert_eq!(
        rustix::process::dumpable_behavior().expect("readable"),
        rustix::process::DumpableBehavior::NotDumpable
    );
}

#[tokio::test]
async fn stdio_argument_patterns_admit_no_option_parent_or_other_directory() {
    let server = example_server();
    let entry = format!(
        "/usr/bin/python3 *.py, /usr/bin/python3 dir/*.py, {server} --transport stdio --name=*"
    );
    let mut h = start_with(DbKind::Sqlite, move |config| config.stdio_allow = entry).await;
    let python = |arg: &str| {
        let mut request = stdio_request(&[arg], &[], &[]);
        if let Some(pb::create_integration_request::Source::Custom(spec)) = &mut request.source
            && let Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(stdio)),
            }) = &mut spec.transport
        {
            stdio.command = "/usr/bin/python3".into();
        }
        request
    };
    for arg in [
        "-cimport os;os.system('id')#.py",
        "-mhttp.server#.py",
        "--help.py",
        "dir/../../tmp/x.py",
        "dir/../x.py",
        "dir/sub/x.py",
        "/tmp/x.py",
        "../x.py",
        "x\n.py",
    ] {
        assert_eq!(
            refused_fields(&mut h, python(arg)).await,
            ["custom.transport.stdio.args"],
            "{arg:?}"
        );
    }
    for name in [
        "--name=../../etc",
        "--name=a/b",
        "--name=..",
        "--name=\u{1b}]52;c;x",
    ] {
        assert_eq!(
            refused_fields(
                &mut h,
                stdio_request(&["--transport", "stdio", name], &[], &[])
            )
            .await,
            ["custom.transport.stdio.args"],
            "{name:?}"
        );
    }
    let status = h
        .client
        .create_integration(req(python("-c.py"), &admin("org-a")))
        .await
        .expect_err("refused");
    assert!(
        status.message().contains("`*.py`") || format!("{status:?}").contains("`*.py`"),
        "the permitted patterns are named: {status:?}"
    );
    create(
        &mut h,
        &admin("org-a"),
        stdio_request(&["--transport", "stdio", "--name=ok"], &[], &[]),
    )
    .await;
}

db_tests!(
    a_changed_stdio_command_line_needs_its_secrets_again,
    a_stdio_integration_with_node_options_or_ld_preload_is_refused,
    an_allow_list_permitting_a_dangerous_name_does_not_load,
    stdio_arguments_outside_the_permitted_patterns_are_refused,
);
