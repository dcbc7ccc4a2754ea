//! Integration tests of the example gRPC service: the real server on an
//! ephemeral port, called through the generated client and reflection.

mod binary;
mod descriptors;
mod inventory;
mod reflection;

use switchboard_example_grpc_service::inventory::v1::inventory_client::InventoryClient;
use tonic::transport::Channel;

/// A fresh service (its own state) on a loopback port, and its `http://` URL.
async fn started() -> String {
    let addr = switchboard_example_grpc_service::spawn()
        .await
        .expect("the service starts");
    format!("http://{addr}")
}

/// A client of a fresh service.
async fn client() -> InventoryClient<Channel> {
    InventoryClient::connect(started().await)
        .await
        .expect("the service accepts connections")
}
