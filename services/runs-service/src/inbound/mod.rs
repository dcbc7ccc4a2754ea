//! gRPC handlers: proto in, domain calls, proto out.

mod agent_settings;
mod convert;
mod error;
mod execute;
mod grpc;
mod manage;

pub(crate) use grpc::RunsApi;

use tonic::Status;

use crate::domain::ids::ParsedId;

/// The id in request field `field`, typed; INVALID_ARGUMENT when it is not
/// one.
fn id<I: ParsedId>(field: &str, value: &str) -> Result<I, Status> {
    I::parse(field, value).map_err(|v| error::status(v.into()))
}
