//! Agents, threads, messages and runs.

use uuid::Uuid;

mod agent;
mod message;
mod pending;
mod run;

pub use agent::{
    Agent, AgentConfig, ClientTool, MAX_FALLBACK_MODELS, ModelChoice, Thread, ToolOverride,
};
pub use message::{Message, Part, Role};
pub use pending::{
    ApprovalAsked, InputAnswers, InputRequest, InputRequired, PendingApproval, PendingCall,
    PendingInput,
};
pub use run::{Run, RunStatus, ToolBinding, ToolTarget, Usage};

/// A new time-ordered id.
pub fn new_id() -> String {
    Uuid::now_v7().hyphenated().to_string()
}
