//! Switchboard's gRPC contracts, generated at build time from `proto/`.
//!
//! The modules mirror the protobuf packages. [`FILE_DESCRIPTOR_SET`] holds the
//! compiled descriptors (with their imports) for server reflection.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]
#![allow(missing_docs, unused_qualifications, clippy::all)]

pub mod json;

/// `switchboard.common.v1`: types shared by both services.
pub mod common {
    pub mod v1 {
        tonic::include_proto!("switchboard.common.v1");
    }
}

/// `switchboard.mcp.v1`: the mcp-service contract.
pub mod mcp {
    // Generated: tonic dispatches every method of the service in one `match`.
    #[allow(clippy::too_many_lines)]
    pub mod v1 {
        tonic::include_proto!("switchboard.mcp.v1");
    }
}

/// `switchboard.runs.v1`: the runs-service contract.
pub mod runs {
    // Generated: tonic dispatches every method of the service in one `match`.
    #[allow(clippy::too_many_lines)]
    pub mod v1 {
        tonic::include_proto!("switchboard.runs.v1");
    }
}

/// Encoded `google.protobuf.FileDescriptorSet` of every Switchboard proto file
/// and its imports.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/switchboard_descriptor.bin"));

/// Fully qualified name of the mcp-service gRPC service.
pub const MCP_SERVICE_NAME: &str = "switchboard.mcp.v1.McpService";
/// Fully qualified name of the runs-service gRPC service.
pub const RUNS_SERVICE_NAME: &str = "switchboard.runs.v1.RunsService";
