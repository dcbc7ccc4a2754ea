//! What a run tells its client as it goes: the events, numbered in order.

use tokio::sync::mpsc;

use crate::domain::{
    entities::{Message, PendingCall, Run, Usage},
    error::RunsError,
    model::ToolCall,
    ports::RepositoryError,
};

/// What kind of tool a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// An MCP tool.
    Mcp,
    /// A client-side tool.
    Client,
    /// A built-in tool.
    Builtin,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallStatus {
    /// It succeeded.
    Succeeded,
    /// It reported an error.
    Failed,
    /// It timed out.
    TimedOut,
    /// The model named an unknown tool.
    NotFound,
}

/// Something that happened in a run.
#[derive(Debug, Clone)]
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

/// An event with its position in the run's stream.
#[derive(Debug, Clone)]
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
    /// The client went away: the run is cancelled.
    Disconnected,
    /// The run failed; recorded on the run and reported.
    Failed(RunsError),
}

impl From<RunsError> for Stop {
    fn from(error: RunsError) -> Self {
        Self::Failed(error)
    }
}

impl From<RepositoryError> for Stop {
    fn from(error: RepositoryError) -> Self {
        Self::Failed(error.into())
    }
}

/// Sends a run's events, numbering them.
pub(super) struct Emitter {
    tx: mpsc::Sender<Envelope>,
    run_id: String,
    sequence: i64,
}

impl Emitter {
    pub(super) fn new(tx: mpsc::Sender<Envelope>, run_id: String) -> Self {
        Self {
            tx,
            run_id,
            sequence: 0,
        }
    }

    /// Sends `event`; [`Stop::Disconnected`] when the client has gone.
    pub(super) async fn emit(&mut self, event: RunEvent) -> Result<(), Stop> {
        self.sequence += 1;
        self.tx
            .send(Envelope {
                run_id: self.run_id.clone(),
                sequence: self.sequence,
                event,
            })
            .await
            .map_err(|_| Stop::Disconnected)
    }
}
