//! Server reflection: how Switchboard discovers the service's methods.

use switchboard_example_grpc_service::INVENTORY_SERVICE_NAME;
use tonic::transport::Channel;
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

use crate::started;

#[tokio::test]
async fn reflection_lists_the_inventory_service() {
    // tonic-reflection's generated client has no `connect`: dial a channel.
    let channel = Channel::from_shared(started().await)
        .expect("a valid URL")
        .connect()
        .await
        .expect("the service accepts connections");
    let mut client = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection answers")
        .into_inner();
    let response = responses
        .message()
        .await
        .expect("the stream goes on")
        .expect("one response");
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("not a list of services: {response:?}");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains(&INVENTORY_SERVICE_NAME),
        "services: {names:?}"
    );
    assert!(
        names.contains(&"grpc.reflection.v1.ServerReflection"),
        "services: {names:?}"
    );
}
