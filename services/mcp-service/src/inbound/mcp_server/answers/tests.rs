use rmcp::model::{ServerJsonRpcMessage, ServerRequest};
use serde_json::json;

use super::*;

fn ping_from_server(id: RequestId) -> ServerSseMessage {
    let message: ServerJsonRpcMessage =
        serde_json::from_value(json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }))
            .expect("a server request");
    ServerSseMessage::from_message(message)
}

fn answer(id: &str) -> ClientJsonRpcMessage {
    serde_json::from_value(json!({ "jsonrpc": "2.0", "id": id, "result": {} }))
        .expect("a client response")
}

fn sent_id(event: &ServerSseMessage) -> String {
    match event.message.as_deref() {
        Some(JsonRpcMessage::Request(request)) => {
            assert!(matches!(request.request, ServerRequest::PingRequest(_)));
            match &request.id {
                NumberOrString::String(s) => s.to_string(),
                other => panic!("a string id, not {other:?}"),
            }
        }
        other => panic!("a request, not {other:?}"),
    }
}

fn answered_id(incoming: Incoming) -> RequestId {
    match incoming {
        Incoming::Here(message) => match *message {
            JsonRpcMessage::Response(response) => response.id,
            other => panic!("a response, not {other:?}"),
        },
        Incoming::Elsewhere { replica, .. } => panic!("kept here, not sent to {replica}"),
    }
}

#[test]
fn a_request_leaves_naming_this_replica_and_its_answer_comes_back_with_the_id_it_had() {
    let asks = Asks::new();
    let session = SessionId::from("s1");
    for original in [
        NumberOrString::Number(7),
        NumberOrString::String("q.1".into()),
    ] {
        let wire = sent_id(&asks.outgoing(&session, ping_from_server(original.clone())));
        assert!(wire.starts_with(&format!("{}.", asks.tag())), "{wire}");
        assert!(asks.any_waiting());
        assert_eq!(
            answered_id(asks.incoming(&session, answer(&wire))),
            original
        );
        assert!(!asks.any_waiting(), "the answered request waits no more");
    }
}

#[test]
fn an_answer_naming_another_replica_goes_to_it() {
    let (here, there) = (Asks::new(), Asks::new());
    let session = SessionId::from("s1");
    let wire = sent_id(&there.outgoing(&session, ping_from_server(NumberOrString::Number(0))));
    match here.incoming(&session, answer(&wire)) {
        Incoming::Elsewhere { replica, .. } => assert_eq!(replica, there.tag()),
        Incoming::Here(message) => panic!("sent to the replica that asked, not kept: {message:?}"),
    }
}

#[test]
fn an_id_no_replica_gave_is_kept_here_as_it_is() {
    let asks = Asks::new();
    let session = SessionId::from("s1");
    for id in [
        "plain",
        "not-a-tag.n1",
        "0123456789abcdeX.n1",
        "0123456789abcdef",
    ] {
        assert_eq!(
            answered_id(asks.incoming(&session, answer(id))),
            NumberOrString::String(id.into()),
            "{id}"
        );
    }
}
