//! The `switchboard.mcp.v1.McpService` handlers.

use switchboard_proto::mcp::v1::mcp_service_server::McpService;

/// The mcp-service API. RPCs not implemented here answer UNIMPLEMENTED.
#[derive(Debug, Default)]
pub(crate) struct McpApi {}

impl McpApi {
    pub(crate) fn new() -> Self {
        Self {}
    }
}

#[tonic::async_trait]
impl McpService for McpApi {}
