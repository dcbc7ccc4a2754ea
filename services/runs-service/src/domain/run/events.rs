//! What a run tells its client as it goes: the events, numbered in order,
//! streamed to the client that started it and stored for `WatchRun`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::domain::{
    entities::{InputRequest, Message, PendingCall, Run, RunStatus, Usage},
    error::RunsError,
    model::ToolCall,
    ports::{RepositoryError, RunsRepository},
};

/// What kind of tool a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolKind {
    /// An MCP tool.
    Mcp,
    /// A client-side tool.
    Client,
    /// A built-in tool.
    Builtin,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolCallStatus {
    /// It succeeded.
    Succeeded,
    /// It reported an error.
    Failed,
    /// It timed out.
    TimedOut,
    /// The model named an unknown tool.
    NotFound,
    /// The server asks the caller before it completes the call; the run
    /// pauses.
    InputRequired,
}

/// Something that happened in a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEvent {
    /// The run started.
    Started(Run),
    /// The model produced text.
    TextDelta(String),
    /// A message was stored.
    MessageCreated(Message),
    /// A tool call started.
    ToolCallStarted {
        /// The call.
        call: ToolCall,
        /// What runs it.
        kind: ToolKind,
    },
    /// A tool call finished.
    ToolCallFinished {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// How it ended.
        status: ToolCallStatus,
        /// What the model was told.
        result: String,
    },
    /// An integration was skipped.
    DiscoveryFailed {
        /// Its id.
        integration_id: String,
        /// Why.
        error: String,
    },
    /// The run paused for client tool calls.
    ClientToolCallsRequired(Vec<PendingCall>),
    /// The run paused: an MCP tool call waits for the caller's answers.
    ToolInputRequired {
        /// The call id.
        id: String,
        /// The tool name the model used.
        name: String,
        /// What the server asks.
        requests: Vec<InputRequest>,
    },
    /// The user must connect an integration (OAuth).
    AuthorizationRequired {
        /// The integration.
        integration_id: String,
        /// Where the user's browser goes.
        url: String,
        /// The tool call that needed it.
        tool_call_id: String,
    },
    /// Tokens of one model call and the total.
    Usage {
        /// This call.
        call: Usage,
        /// The run so far.
        total: Usage,
    },
    /// The run ended without failing.
    Completed(Run),
    /// The run failed.
    Failed {
        /// The run.
        run: Run,
        /// Why.
        error: String,
    },
}

impl RunEvent {
    /// Whether the event ends the run's stream.
    pub fn is_last(&self) -> bool {
        matches!(self, Self::Completed(_) | Self::Failed { .. })
    }

    /// The event that tells where a run that ended stands.
    pub fn ending(run: Run) -> Self {
        match run.status {
            RunStatus::Failed | RunStatus::Cancelled | RunStatus::Interrupted => {
                let error = run
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("the run ended {}", run.status.as_str()));
                Self::Failed { run, error }
            }
            _ => Self::Completed(run),
        }
    }
}

/// An event with its position in the run's stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    /// The run.
    pub run_id: String,
    /// Position, from 1.
    pub sequence: i64,
    /// The event.
    pub event: RunEvent,
}

/// Why a run's body stopped before its end.
#[derive(Debug)]
pub(super) enum Stop {
    /// The client went away (and did not ask the run to go on without it):
    /// the run is cancelled.
    Disconnected,
    /// `CancelRun` asked for the run's end: it is cancelled.
    Cancelled,
    /// The run failed; recorded on the run and reported.
    Failed(RunsError),
    /// The run was ended elsewhere (interrupted by a replica that saw its
    /// lease expire, cancelled), or this process lost its lease: this
    /// process stops writing it.
    Ended,
}

impl From<RunsError> for Stop {
    fn from(error: RunsError) -> Self {
        Self::Failed(error)
    }
}

impl From<RepositoryError> for Stop {
    fn from(error: RepositoryError) -> Self {
        match error {
            RepositoryError::RunEnded => Self::Ended,
            other => Self::Failed(other.into()),
        }
    }
}

/// Sends a run's events, numbering them, and stores them for `WatchRun`.
pub(super) struct Emitter {
    tx: mpsc::Sender<Envelope>,
    run_id: String,
    sequence: i64,
    /// Stored events; past `max_stored` only the last one is.
    stored: u64,
    max_stored: u64,
    repo: Arc<dyn RunsRepository>,
    /// The run goes on when its client leaves.
    detached: bool,
    /// Whether the client still reads the stream.
    live: bool,
}

/// Where an [`Emitter`] starts.
pub(super) struct EmitterStart {
    /// The sequence of the run's last event so far (0 for a new run).
    pub(super) after: i64,
    /// Events stored per run at most.
    pub(super) max_stored: u64,
    /// Whether the run goes on when its client leaves.
    pub(super) detached: bool,
}

impl Emitter {
    pub(super) fn new(
        tx: mpsc::Sender<Envelope>,
        run_id: String,
        repo: Arc<dyn RunsRepository>,
        start: EmitterStart,
    ) -> Self {
        Self {
            tx,
            run_id,
            sequence: start.after,
            stored: u64::try_from(start.after).unwrap_or(0),
            max_stored: start.max_stored,
            repo,
            detached: start.detached,
            live: true,
        }
    }

    /// Stores and sends `event`; [`Stop::Disconnected`] when the client has
    /// gone and the run is not detached.
    pub(super) async fn emit(&mut self, event: RunEvent) -> Result<(), Stop> {
        self.sequence += 1;
        let envelope = Envelope {
            run_id: self.run_id.clone(),
            sequence: self.sequence,
            event,
        };
        self.store(&envelope).await;
        if !self.live {
            return Ok(());
        }
        if self.tx.send(envelope).await.is_err() {
            if !self.detached {
                return Err(Stop::Disconnected);
            }
            self.live = false;
        }
        Ok(())
    }

    /// Stores `envelope` for watchers, within the run's bound. A failure is
    /// logged, not fatal: the run's messages are its record, the events a
    /// replay of how they came.
    async fn store(&mut self, envelope: &Envelope) {
        if self.stored >= self.max_stored && !envelope.event.is_last() {
            return;
        }
        match self.repo.append_run_event(envelope).await {
            Ok(()) => self.stored += 1,
            Err(error) => {
                tracing::warn!(run_id = %self.run_id, sequence = envelope.sequence, error = %error, "failed to store a run event");
            }
        }
    }
}
