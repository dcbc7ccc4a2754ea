//! gRPC handlers: proto in, domain calls, proto out.

mod convert;
mod error;
mod grpc;

pub(crate) use grpc::RunsApi;
