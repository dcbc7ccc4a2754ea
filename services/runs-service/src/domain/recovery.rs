//! What a run does when the replica running it stops: end interrupted, or
//! continue on another replica from what it recorded. The agent chooses,
//! and names the tools that may be made again when their call may have
//! reached the server without its result being recorded.

use serde::{Deserialize, Serialize};

/// Tools an agent may list as idempotent, at most.
pub const MAX_IDEMPOTENT_TOOLS: usize = 256;
/// Bytes of one listed tool name, at most.
pub const MAX_IDEMPOTENT_TOOL_BYTES: usize = 128;

/// What a run does when the replica running it stops before its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunRecovery {
    /// The service default, [`RunRecovery::Interrupt`]: continuing keeps
    /// the caller's token sealed for the run's life, and a tool call may
    /// be left unresolved, so an agent opts in.
    #[default]
    Unspecified,
    /// The run ends interrupted once its lease expires.
    Interrupt,
    /// Another replica takes the run over and continues it.
    Continue,
}

impl RunRecovery {
    /// Whether a run of the agent continues on another replica.
    pub fn continues(self) -> bool {
        self == Self::Continue
    }
}

/// Why an agent's `idempotent_tools` is refused; `None` when it is within
/// its bounds.
pub fn check_idempotent_tools(names: &[String]) -> Option<String> {
    if names.len() > MAX_IDEMPOTENT_TOOLS {
        return Some(format!(
            "{} tools are listed; at most {MAX_IDEMPOTENT_TOOLS} may be",
            names.len()
        ));
    }
    names.iter().find_map(|name| {
        (name.is_empty() || name.len() > MAX_IDEMPOTENT_TOOL_BYTES)
            .then(|| format!("each name must have 1 to {MAX_IDEMPOTENT_TOOL_BYTES} bytes"))
    })
}

/// How a run that continues on another replica resolved the tool calls
/// that were in flight when its replica stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuation {
    /// The last of the run's events stored before the takeover.
    pub after_sequence: i64,
    /// How many times the run was taken over, this one included.
    pub takeovers: u32,
    /// Calls whose result was recorded: not made again.
    pub recovered: Vec<String>,
    /// Calls without a recorded result made again (idempotent tools).
    pub repeated: Vec<String>,
    /// Calls without a recorded result not made again: they may have run.
    pub unresolved: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotent_tools_past_their_bounds_are_named() {
        assert_eq!(check_idempotent_tools(&["a".into()]), None);
        let many = vec!["t".to_owned(); MAX_IDEMPOTENT_TOOLS + 1];
        assert!(check_idempotent_tools(&many).is_some_and(|e| e.contains("257 tools")));
        let long = vec!["x".repeat(MAX_IDEMPOTENT_TOOL_BYTES + 1)];
        assert!(check_idempotent_tools(&long).is_some());
        assert!(check_idempotent_tools(&[String::new()]).is_some());
        let at_limit = vec!["x".repeat(MAX_IDEMPOTENT_TOOL_BYTES); MAX_IDEMPOTENT_TOOLS];
        assert_eq!(check_idempotent_tools(&at_limit), None);
    }

    #[test]
    fn only_continue_continues_and_agents_stored_before_read_as_the_default() {
        assert!(RunRecovery::Continue.continues());
        assert!(!RunRecovery::Interrupt.continues());
        assert!(!RunRecovery::Unspecified.continues());
        #[derive(Deserialize)]
        struct Stored {
            #[serde(default)]
            recovery: RunRecovery,
        }
        let stored: Stored = serde_json::from_str("{}").expect("reads");
        assert_eq!(stored.recovery, RunRecovery::Unspecified);
    }
}
