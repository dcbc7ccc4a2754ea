//! Compiles `proto/` with protox (no system `protoc`) and generates the tonic
//! client and server of the inventory into `OUT_DIR`, with the file
//! descriptor set that server reflection serves.

use std::{env, error::Error, fs, path::PathBuf};

use prost::Message;

const PROTO_ROOT: &str = "proto";
const FILES: &[&str] = &["example/inventory/v1/inventory.proto"];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    for file in FILES {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{file}");
    }

    // protox resolves the google/protobuf imports itself and puts their
    // descriptors in the set, so a client can build a pool from it alone.
    let descriptors = protox::compile(FILES, [PROTO_ROOT])?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(
        out_dir.join("inventory_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;

    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
