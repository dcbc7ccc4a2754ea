//! What runs-service's domain needs from the outside: storage, mcp-service
//! and model providers, and the keeping of callers of runs that continue on
//! another replica.

mod mcp;
mod model;
mod repository;
mod takeovers;

use switchboard_auth::{BearerToken, Principal};

pub use mcp::{
    ApprovalDecision, ApprovalUnusable, Capabilities, Content, DecideError, FailureFacts,
    McpCallError, McpPort, McpPrompt, McpPromptArgument, McpPromptRequest, McpResource,
    McpResourceRequest, McpTool, McpToolRequest, PromptLine, ResourceData, ResourceKindOf,
    ToolFailure, ToolOutput,
};
pub use model::{ModelProvider, ModelProviders, ModelStream};
pub use repository::{Cursor, LeaseState, LiveRuns, RepositoryError, RunsRepository};
pub use takeovers::{CallerKeeper, Claimed, Keeping, RunTakeovers, SealedCaller};

/// The caller a run acts for: mcp-service is called with their token, so it
/// enforces the same organization.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who they are.
    pub principal: Principal,
    /// Their bearer token.
    pub token: Option<BearerToken>,
}
