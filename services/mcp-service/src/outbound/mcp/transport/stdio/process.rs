//! A stdio server's process group and home, held as long as its session.

use super::home::{PrivateHome, SharedChild};

/// A stdio server's process group, killed when dropped (with its session),
/// and its private home, removed after it.
pub struct StdioChild {
    /// The process group (shared with the disk quota check, which may end it).
    pub(super) process: SharedChild,
    /// The session's home; dropped after the kill.
    pub(super) home: PrivateHome,
}

impl std::fmt::Debug for StdioChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioChild")
            .field("pid", &self.pid())
            .field("home", &self.home)
            .finish()
    }
}

impl StdioChild {
    /// The server's process id (its group's id), if it still has one.
    pub fn pid(&self) -> Option<u32> {
        self.process.lock().ok().and_then(|child| child.id())
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        // The group leader's id is the group id: this kills the server and
        // anything it started.
        let mut child = self
            .process
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = child.start_kill() {
            tracing::debug!(error = %error, "stdio server already gone");
        }
    }
}
