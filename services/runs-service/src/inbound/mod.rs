//! gRPC handlers: proto in, domain calls, proto out.

mod convert;
mod error;
mod execute;
mod grpc;
mod manage;

pub(crate) use grpc::RunsApi;
