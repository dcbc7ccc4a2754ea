//! The example gRPC service the tests offer to Switchboard as a gRPC
//! integration: an in-memory inventory (`example.inventory.v1.Inventory`)
//! with server reflection, so Switchboard can discover its methods.
//!
//! [`serve`] answers on a listener the caller bound (over TLS, with client
//! certificates required or not: [`serve_with`]); [`spawn`] binds a
//! loopback port and serves in a task, for tests in the same process.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod service;

use std::net::SocketAddr;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

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
    serve_with(listener, None).await
}

/// [`serve`], over TLS when `tls` is given (its identity, and its client CA
/// when client certificates are required).
pub async fn serve_with(listener: TcpListener, tls: Option<ServerTlsConfig>) -> anyhow::Result<()> {
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("failed to build the reflection service")?;
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        server = server
            .tls_config(tls)
            .context("failed to set up the server's TLS")?;
    }
    server
        .add_service(InventoryService::seeded().into_server())
        .add_service(reflection)
        .serve_with_incoming(TcpListenerStream::new(listener))
        .await
        .context("failed to serve the inventory")
}

/// The server TLS of `--tls-cert`/`--tls-key` (PEM), requiring a client
/// certificate issued by `client_ca` (PEM) when it is given.
pub fn server_tls(cert_pem: &[u8], key_pem: &[u8], client_ca: Option<&[u8]>) -> ServerTlsConfig {
    let tls = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem));
    match client_ca {
        Some(ca) => tls.client_ca_root(Certificate::from_pem(ca)),
        None => tls,
    }
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
