//! Compiles `proto/` with protox (no system `protoc`) and generates the tonic
//! clients and servers into `OUT_DIR`, with the file descriptor set that server
//! reflection serves.

use std::{env, error::Error, fs, path::PathBuf};

use prost::Message;

const PROTO_ROOT: &str = "../../proto";
const FILES: &[&str] = &[
    "switchboard/common/v1/common.proto",
    "switchboard/mcp/v1/mcp.proto",
    "switchboard/mcp/v1/policy.proto",
    "switchboard/mcp/v1/audit.proto",
    "switchboard/mcp/v1/approvals.proto",
    "switchboard/mcp/v1/toolsets.proto",
    "switchboard/runs/v1/runs.proto",
];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    for file in FILES {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{file}");
    }

    let descriptors = protox::compile(FILES, [PROTO_ROOT])?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(
        out_dir.join("switchboard_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // RPCs a service does not implement yet answer UNIMPLEMENTED.
        .generate_default_stubs(true)
        // Ordered maps encode the same request to the same bytes, which the
        // fingerprint of an idempotency key (`request_id`) relies on.
        .btree_map(".switchboard.mcp.v1.StdioTransport")
        .btree_map(".switchboard.mcp.v1.PredefinedIntegrationSpec")
        .compile_fds(descriptors)?;
    Ok(())
}
