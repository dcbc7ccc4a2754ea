//! Adapters, one room per family: the MCP client with its sessions and
//! transports, OAuth, the outbound HTTP client, storage and telemetry.

pub mod gateways;
pub mod grpc;
pub mod http;
pub mod mcp;
pub mod oauth;
pub mod openapi;
pub mod service_auth;
pub mod storage;
pub mod telemetry;
