//! gRPC handlers: proto in, domain calls, proto out.

mod convert;
mod error;
mod grpc;
pub(crate) mod wire;

pub(crate) use grpc::McpApi;
