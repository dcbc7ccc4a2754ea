//! The gRPC server chassis every Switchboard service runs on.
//!
//! One place builds the middleware stack, serves `grpc.health.v1` and server
//! reflection next to the service's own API, and shuts down gracefully: health
//! turns NOT_SERVING first so load balancers stop routing, then in-flight calls
//! drain until a deadline.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod args;
mod auth_layer;
mod byte_size;
pub mod client_error;
mod config;
pub mod connections;
mod deadline;
pub mod error;
mod gate;
mod global_limit;
mod held_body;
mod limits;
mod org_limits;
pub mod paging;
mod readiness;
mod reflection;
pub mod request_id;
mod rpc_methods;
mod rpc_telemetry;
mod serve;
mod server_facts;
mod signal;
pub mod tls;

pub use args::{AuthArgs, CommonArgs, JwksArgs, TelemetryArgs};
pub use auth_layer::{AuthLayer, PUBLIC_PATH_PREFIXES, bearer_principal, principal};
pub use byte_size::ByteSize;
pub use client_error::{ClientError, ErrorKind};
pub use config::ServerArgs;
pub use deadline::{DeadlineLayer, Deadlines};
pub use error::{ApiError, FieldViolation, Refusal};
pub use global_limit::{GlobalLimitLayer, GlobalPermit};
pub use held_body::HeldBody;
pub use limits::CallLimits;
pub use org_limits::{
    Ask, GrantSettings, GrantedSlots, MemorySlotGrants, MemoryTokenBuckets, NotAdmitted,
    OrgLimitLayer, OrgLimitTable, OrgLimits, OrgPermit, OrgWaits, PgSlotGrants, PgTokenBuckets,
    SharedStores, SlotGrants, Taken, TokenAsk, TokenBuckets, grant,
};
pub use request_id::{Begun, Idempotency, fingerprint, parse_request_id};
pub use serve::{RunningServer, Services, bind_and_serve, serve, spawn};
pub use server_facts::{MAX_DETAIL_BYTES, ServerFacts};
pub use signal::shutdown_signal;
pub use tls::{PeerIdentity, TlsArgs};

/// The `grpc.health.v1` service name of liveness (Kubernetes liveness
/// probes): SERVING while the process serves, unlike the server (`""`) and
/// the API services, which follow the database and turn NOT_SERVING when the
/// process stops.
pub const LIVENESS_SERVICE: &str = "liveness";

/// What is left of the caller's deadline, from the `grpc-timeout` header
/// (`<digits><unit>` with unit H, M, S, m, u or n).
pub fn grpc_deadline(metadata: &tonic::metadata::MetadataMap) -> Option<std::time::Duration> {
    grpc_timeout(metadata.as_ref())
}

/// [`grpc_deadline`] from the HTTP headers of a call.
pub fn grpc_timeout(headers: &http::HeaderMap) -> Option<std::time::Duration> {
    use std::time::Duration;
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod deadline_tests {
    use std::time::Duration;

    use super::grpc_deadline;

    #[test]
    fn grpc_timeouts_parse_in_every_unit_and_junk_is_ignored() {
        let parse = |v: &str| {
            let mut metadata = tonic::metadata::MetadataMap::new();
            metadata.insert("grpc-timeout", v.parse().expect("ascii"));
            grpc_deadline(&metadata)
        };
        assert_eq!(parse("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(parse("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse("7u"), Some(Duration::from_micros(7)));
        assert_eq!(parse("S"), None);
        assert_eq!(parse("123456789S"), None);
        assert_eq!(parse("5x"), None);
    }
}
