//! gRPC handlers: proto in, domain calls, proto out.

mod grpc;

pub(crate) use grpc::McpApi;
