//! What a tool call may use and how it ended: the vocabulary the router and
//! each kind of tool share.

use std::sync::Arc;

use crate::domain::{
    entities::{PendingApproval, PendingInput},
    events::ToolCallStatus,
    ids::{IntegrationId, ThreadId},
    ports::{Caller, Capabilities},
    texts,
};

/// What a tool call may use: who the run acts for, its thread, and what the
/// agent's integrations offer.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The caller the run acts for.
    pub caller: Caller,
    /// The run's thread (the upstream session scope, the data sources' owner).
    pub thread_id: ThreadId,
    /// What the agent's integrations offer.
    pub capabilities: Arc<Vec<Capabilities>>,
}

impl ToolContext {
    /// The run's integration whose id a model wrote as `named`: `None` when
    /// the text is not an integration id (the model's text is parsed here,
    /// where it enters) or names none of the run's integrations.
    pub fn integration(&self, named: &str) -> Option<&Capabilities> {
        let id: IntegrationId = named.parse().ok()?;
        self.capabilities.iter().find(|c| c.integration_id == id)
    }
}

/// How a tool call ended, as the model and the client see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// What the model reads.
    pub text: String,
    /// Whether the model is told the call failed.
    pub is_error: bool,
    /// How the call ended, for the client's event.
    pub status: ToolCallStatus,
    /// What the run's caller is asked to do, if anything.
    pub action: Option<ToolAction>,
    /// Whether the call changed the thread's data sources (a CSV import):
    /// the run reads them again and offers the tools that follow.
    pub sources_changed: bool,
}

/// What a tool call asks of the run's caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAction {
    /// The server asks before it completes the call: the run pauses until
    /// the caller answers (the model reads nothing yet).
    Input(Box<PendingInput>),
    /// A policy rule gates the call behind an approval: the run pauses
    /// until the caller resumes it (the model reads nothing yet).
    Approval(Box<PendingApproval>),
    /// The user must connect the integration (OAuth); the model was told.
    Authorize {
        /// The integration.
        integration_id: IntegrationId,
        /// Where the user's browser goes.
        url: String,
    },
}

impl ToolOutcome {
    /// The call succeeded.
    pub fn succeeded(text: String) -> Self {
        Self {
            text,
            is_error: false,
            status: ToolCallStatus::Succeeded,
            action: None,
            sources_changed: false,
        }
    }

    /// The same outcome, saying that the thread's data sources changed.
    pub fn changing_sources(self) -> Self {
        Self {
            sources_changed: true,
            ..self
        }
    }

    /// The call failed.
    pub fn failed(text: String) -> Self {
        Self {
            text,
            is_error: true,
            status: ToolCallStatus::Failed,
            action: None,
            sources_changed: false,
        }
    }

    /// The model named a tool withheld because its server changed it.
    pub(super) fn withheld(name: &str) -> Self {
        Self {
            text: texts::tool_withheld(name),
            is_error: true,
            status: ToolCallStatus::NotFound,
            action: None,
            sources_changed: false,
        }
    }

    /// The model named a tool it was not offered.
    pub(super) fn not_found(name: &str) -> Self {
        Self::failed_not_found(texts::tool_not_found(name))
    }

    /// The model named a tool there is none of, told as `text`.
    pub(super) fn failed_not_found(text: String) -> Self {
        Self {
            text,
            is_error: true,
            status: ToolCallStatus::NotFound,
            action: None,
            sources_changed: false,
        }
    }
}
