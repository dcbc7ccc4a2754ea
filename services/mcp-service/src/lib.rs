//! mcp-service: the MCP integrations of each organization, and the calls that
//! reach their servers (`Discover`, `ExecuteTool`, `RetrieveResource`,
//! `GetPrompt`).
//!
//! `main.rs` parses [`Config`] and calls [`run`]; tests call [`spawn`] to get
//! the same server on an ephemeral port.

// No function past 60 lines (clippy.toml) in the service's code; its unit
// tests are exempt. `make clippy` enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod app;
mod approval_settings;
mod audit_settings;
mod config;
pub mod domain;
mod endpoint_settings;
mod inbound;
pub mod outbound;
mod policy_settings;
pub use switchboard_sealing as sealing;
mod grpc_settings;
mod guardrail_settings;
mod openapi_settings;
mod test_config;
mod toolset_settings;

pub use app::{SERVICE_NAME, migrate, run, spawn};
pub use config::Config;
pub use domain::elicitation::ElicitationPolicy;

/// The conversions of MCP results into the gRPC responses, reachable by the
/// fuzz targets (`fuzz/`); not an API of the service.
#[doc(hidden)]
pub mod wire {
    use rmcp::model::{GetPromptResult, ReadResourceResult};
    use switchboard_proto::mcp::v1 as pb;

    use crate::domain::{
        guardrails::Checked,
        outcome::{Outcome, ToolOutcome},
        ports::{CallError, Discovery},
    };

    /// A tool call's outcome (or a failed call) as the ExecuteTool response.
    pub fn tool_result(
        outcome: Result<ToolOutcome, CallError>,
        tool: &str,
    ) -> pb::ExecuteToolResponse {
        crate::inbound::wire::tool_result(outcome.map(Checked::clean), tool)
    }

    /// A resource read as the RetrieveResource response, its kind decided
    /// as the domain decides it.
    pub fn resource_read(
        uri: String,
        result: Outcome<ReadResourceResult>,
    ) -> pb::RetrieveResourceResponse {
        let read = crate::domain::resource::ResourceRead::new(uri, result);
        crate::inbound::wire::resource_read(read)
    }

    /// A rendered prompt as the GetPrompt response.
    pub fn prompt_result(result: &Outcome<GetPromptResult>) -> pb::GetPromptResponse {
        crate::inbound::wire::prompt_result(&Checked::clean(result.clone()))
    }

    /// A discovery as the Discover response.
    pub fn discovery(discovery: &Discovery) -> pb::DiscoverResponse {
        crate::inbound::wire::discovery(discovery)
    }
}
