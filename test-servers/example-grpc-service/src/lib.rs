//! The example gRPC service the tests offer to Switchboard as a gRPC
//! integration: an in-memory inventory (`example.inventory.v1.Inventory`)
//! with server reflection, so Switchboard can discover its methods.
//!
//! [`serve`] answers on a listener the caller bound; [`spawn`] binds a
//! loopback port and serves in a task, for tests in the same process.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod service;

use std::net::SocketAddr;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;

pub use service::{InventoryService, SEEDED_ITEM_ID, seeded_item};

/// `example.inventory.v1`: the generated messages, client and server.
pub mod inventory {
    /// The generated code of `example/inventory/v1/inventory.proto`.
    // Generated: tonic dispatches every method of the service in one `match`.
    #[allow(
        missing_docs,
        unused_qualifications,
        clippy::all,
        clippy::too_many_lines
    )]
    pub mod v1 {
        tonic::include_proto!("example.inventory.v1");
    }
}

/// Encoded `google.protobuf.FileDescriptorSet` of `inventory.proto` and the
/// `google/protobuf` files it imports: enough for a client to build a
/// descriptor pool from it alone.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/inventory_descriptor.bin"));

/// Fully qualified name of the inventory gRPC service.
pub const INVENTORY_SERVICE_NAME: &str = "example.inventory.v1.Inventory";

/// Serves the inventory (seeded with [`seeded_item`]) and server reflection
/// v1 on `listener` until the server fails.
pub async fn serve(listener: TcpListener) -> anyhow::Result<()> {
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("failed to build the reflection service")?;
    tonic::transport::Server::builder()
        .add_service(InventoryService::seeded().into_server())
        .add_service(reflection)
        .serve_with_incoming(TcpListenerStream::new(listener))
        .await
        .context("failed to serve the inventory")
}

/// Binds `127.0.0.1:0`, serves [`serve`] in a tokio task and returns the
/// address it listens on.
pub async fn spawn() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("failed to bind 127.0.0.1:0")?;
    let addr = listener
        .local_addr()
        .context("failed to read the bound address")?;
    tokio::spawn(async move {
        if let Err(error) = serve(listener).await {
            eprintln!("example gRPC service on {addr} stopped: {error:#}");
        }
    });
    Ok(addr)
}
