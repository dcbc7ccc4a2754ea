//! gRPC handlers: proto in, domain calls, proto out.

mod convert;
mod error;
mod grpc;
mod parse;
mod resume;
pub(crate) mod wire;
#[cfg(test)]
mod wire_tests;

pub(crate) use grpc::McpApi;
pub(crate) use resume::ResumeSeal;
