//! Inbound adapters: the gRPC handlers (proto in, domain calls, proto
//! out) and the streamable HTTP MCP endpoint beside them.

pub(crate) mod approvals;
mod audit;
mod convert;
mod error;
mod grpc;
pub(crate) mod mcp_server;
mod parse;
mod policy;
mod resume;
mod toolsets;
pub(crate) mod wire;
#[cfg(test)]
mod wire_tests;

pub(crate) use approvals::ApprovalApi;
pub(crate) use audit::AuditApi;
pub(crate) use grpc::McpApi;
pub(crate) use policy::PolicyApi;
pub(crate) use resume::ResumeSeal;
pub(crate) use toolsets::ToolsetsApi;
