//! The stdio transport: an allow-listed child process in a private home,
//! its output read in bounded lines.

pub mod child;
pub mod home;
pub mod lines;

use std::{collections::BTreeMap, sync::Arc};

use process_wrap::tokio::{KillOnDrop, ProcessGroup};
use rmcp::{ServiceExt, transport::async_rw::AsyncRwTransport};

use self::{child::Launch, lines::OversizeAnswering};
use crate::{
    domain::integration::Integration,
    outbound::{
        mcp::{
            connect::McpConnector,
            sessions::{Live, SessionHandler, StdioChild},
        },
        telemetry::SessionOpen,
    },
};

/// Starts the allow-listed program of `integration` in a private home,
/// confined, and opens a session over its stdin and stdout.
pub(super) async fn open(
    connector: &McpConnector,
    integration: &Integration,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    handler: SessionHandler,
) -> Result<Live, String> {
    // The allow-list may have changed since the integration was saved.
    let refusals = connector.policy.stdio.check(
        command,
        args,
        env.keys().map(String::as_str),
        integration.secrets.env().map(|(name, _)| name),
    );
    if let Some(refusal) = refusals.first() {
        return Err(format!(
            "the stdio allow-list refuses `{command}`: {} {}",
            refusal.field, refusal.reason
        ));
    }
    let settings = connector.policy.stdio.child_settings();
    let home = connector.homes.create(&integration.org_id).await?;
    let launch = Launch {
        command,
        args,
        env,
        secrets: &integration.secrets,
        home: &home,
    };
    let mut process = child::command(launch, settings);
    // Its own process group, so closing the session kills whatever the
    // server started too.
    process.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    child::protect_service();
    let mut child = process
        .spawn()
        .map_err(|e| format!("failed to start `{command}`: {e}"))?;
    child::confine(&*child, settings)?;
    let (Some(stdout), Some(stdin)) = (child.stdout().take(), child.stdin().take()) else {
        return Err(format!("`{command}` started without pipes"));
    };
    let process = Arc::new(std::sync::Mutex::new(child));
    home.watch(&process);
    let child = StdioChild { process, home };
    // Bounded lines: a server cannot make us buffer without limit.
    let stdout = OversizeAnswering::new(stdout, connector.defaults.max_message_bytes);
    let transport = AsyncRwTransport::new_client(stdout, stdin)
        .with_max_line_length(connector.defaults.max_message_bytes);
    let session = handler
        .serve(transport)
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    Ok(Live {
        session,
        child: Some(child),
        open: SessionOpen::new(integration.id),
    })
}
