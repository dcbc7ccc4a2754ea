//! The resource tool bridge plan's log lines, read from a subscriber that
//! records what the tools log in the services' human-readable format: a
//! read, a failed read, the tools offered, and a hostile server's URI that
//! tries to start a log line of its own (in this tool's lines and in the
//! resource retrieval's).

use std::{
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use crate::{
    domain::{ports::McpPort, tools::ToolRouter},
    fakes::{FakeMcp, NoSources},
};

/// What the subscriber wrote.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl io::Write for Logged {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if let Ok(mut logged) = self.0.lock() {
            logged.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Logged {
    fn lines(&self) -> Vec<String> {
        let logged = self.0.lock().map(|l| l.clone()).unwrap_or_default();
        String::from_utf8_lossy(&logged)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The model's call of `mcp_read_resource` with `arguments` against `mcp`'s
/// integration `shop`: whether it failed, and the lines logged meanwhile.
async fn read_logging(mcp: FakeMcp, arguments: serde_json::Value) -> (bool, Vec<String>) {
    let logged = Logged::default();
    let writer = logged.clone();
    // The services' human-readable lines.
    let subscriber = tracing_subscriber::fmt()
        .fmt_fields(switchboard_telemetry::escaped_fields())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let router =
        |mcp: Arc<dyn McpPort>| ToolRouter::new(mcp, Arc::new(NoSources), Duration::from_secs(1));
    let outcome =
        super::super::tests::outcome_with(mcp, router, "mcp_read_resource", arguments).await;
    (outcome.is_error, logged.lines())
}

fn has(lines: &[String], level: &str, message: &str) -> bool {
    lines
        .iter()
        .any(|line| line.trim_start().starts_with(level) && line.ends_with(message))
}

#[tokio::test]
async fn a_read_logs_the_plans_lines() {
    let mcp = FakeMcp::default().resource("shop", "data://notes", Some("hello"));
    let (failed, lines) = read_logging(mcp, serde_json::json!({"uri": "data://notes"})).await;
    assert!(!failed);
    assert!(
        has(&lines, "INFO", "Added 2 synthetic resource tools"),
        "{lines:#?}"
    );
    assert!(
        has(&lines, "DEBUG", "Successfully read resource: data://notes"),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn a_failed_read_logs_its_error() {
    let mcp = FakeMcp::default().resource("shop", "data://gone", None);
    let (failed, lines) =
        read_logging(mcp, serde_json::json!({"resourceName": "data://gone"})).await;
    assert!(failed);
    assert!(
        has(
            &lines,
            "ERROR",
            r#"Error reading resource data://gone: {"error":"Failed to read resource: no resource data://gone"}"#
        ),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn a_servers_uri_cannot_start_a_log_line_of_its_own() {
    let hostile = "data://x\nERROR forged: the audit trail was cleared";
    let mcp = FakeMcp::default().resource("shop", hostile, None);
    let (_, lines) = read_logging(mcp, serde_json::json!({"uri": hostile})).await;
    assert!(
        lines.iter().all(|line| !line.starts_with("ERROR forged")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.contains(r"Error reading resource data://x\nERROR forged")),
        "{lines:#?}"
    );
}
