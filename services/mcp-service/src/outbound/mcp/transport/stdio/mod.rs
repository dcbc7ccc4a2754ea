//! The stdio transport: an allow-listed child process in a private home,
//! its output read in bounded lines. The room owns the homes of every stdio
//! session, and each session's process group ([`StdioChild`]).

pub mod child;
pub mod home;
pub mod lines;
mod process;

use std::{collections::BTreeMap, sync::Arc};

use process_wrap::tokio::{KillOnDrop, ProcessGroup};
use rmcp::{ServiceError, ServiceExt, transport::async_rw::AsyncRwTransport};

pub use self::process::StdioChild;
use self::{child::Launch, home::StdioHomes, lines::OversizeAnswering};
use super::{Session, SessionClient};
use crate::domain::{integration::Integration, resolve::ConfigPolicy};

/// What every stdio session shares: the allow-list and child settings, the
/// homes, and the longest line accepted from a server.
#[derive(Debug, Clone)]
pub struct StdioRoom {
    policy: Arc<ConfigPolicy>,
    homes: StdioHomes,
    max_line_bytes: usize,
}

/// Whether `error` proves the request never reached the server: the stdio
/// server had closed its input before the request was written. A closed
/// output or a timeout may come after the server read the request.
pub fn never_delivered(error: &ServiceError) -> bool {
    let ServiceError::TransportSend(error) = error else {
        return false;
    };
    error
        .error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe)
}

impl StdioRoom {
    /// The room of servers `policy`'s allow-list permits, in homes below its
    /// child settings' root (what an earlier run left there is removed).
    pub fn new(policy: Arc<ConfigPolicy>, max_line_bytes: usize) -> Self {
        let homes = StdioHomes::new(policy.stdio.child_settings());
        Self {
            policy,
            homes,
            max_line_bytes,
        }
    }

    /// Starts the allow-listed program of `integration` in a private home,
    /// confined, and opens a session over its stdin and stdout.
    pub(super) async fn open<H: SessionClient>(
        &self,
        integration: &Integration,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        handler: H,
    ) -> Result<(Session<H>, StdioChild), String> {
        // The allow-list may have changed since the integration was saved.
        let refusals = self.policy.stdio.check(
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
        let settings = self.policy.stdio.child_settings();
        let home = self.homes.create(&integration.org_id).await?;
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
        let stdout = OversizeAnswering::new(stdout, self.max_line_bytes);
        let transport =
            AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(self.max_line_bytes);
        let session = handler
            .serve(transport)
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))?;
        Ok((session, child))
    }
}
