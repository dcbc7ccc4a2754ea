//! The gRPC server chassis every Switchboard service runs on.
//!
//! One place builds the middleware stack, serves `grpc.health.v1` and server
//! reflection next to the service's own API, and shuts down gracefully: health
//! turns NOT_SERVING first so load balancers stop routing, then in-flight calls
//! drain until a deadline.

mod args;
mod config;
pub mod error;
mod serve;

pub use args::{AuthArgs, CommonArgs, TelemetryArgs};
pub use config::ServerArgs;
pub use error::{ApiError, FieldViolation};
pub use serve::{RunningServer, Services, bind_and_serve, serve, shutdown_signal, spawn};
