//! One method's call: the arguments as its request message, the
//! integration's credential and the caller's trace context as metadata,
//! the response messages as JSON (a server-streaming call's collected up
//! to their bound), and a status other than OK as a tool error the model
//! reads, with its `google.rpc` details.

use std::{str::FromStr as _, time::Duration};

use http::{HeaderMap, uri::PathAndQuery};
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};
use tonic::{
    Code, Status,
    codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
    metadata::MetadataMap,
    transport::Channel,
};
use tonic_types::StatusExt as _;
use tracing::Instrument as _;

use super::{status_with_causes, with_causes};

use crate::{
    domain::{
        grpc::{Method, message},
        ports::CallError,
    },
    outbound::service_auth::{Headers, ServiceAnswer},
};

/// How large a result, and how many streamed messages, a call keeps.
#[derive(Debug, Clone, Copy)]
pub struct CallBounds {
    /// The largest result, in bytes (one message, or a stream's together).
    pub max_result_bytes: usize,
    /// The most messages of a server-streaming call.
    pub max_stream_messages: usize,
}

/// Calls `method` on `channel` with `arguments`, carrying `credential`
/// (the integration's, as metadata).
pub async fn call(
    channel: Channel,
    credential: HeaderMap,
    method: &Method,
    arguments: &Map<String, Value>,
    bounds: CallBounds,
    timeout: Duration,
) -> Result<ServiceAnswer, CallError> {
    let request = match message::request(&method.descriptor.input(), arguments) {
        Ok(request) => request,
        Err(why) => return Ok(answer(CallToolResult::error(vec![ContentBlock::text(why)]))),
    };
    let path = PathAndQuery::from_str(&method.path)
        .map_err(|_| CallError::Connect(format!("{} is not a gRPC path", method.path)))?;
    let span = tracing::info_span!(
        "grpc.upstream",
        otel.name = %method.label(),
        otel.kind = "client",
        rpc.system = "grpc",
        rpc.method = %method.label(),
    );
    let mut headers = credential;
    switchboard_telemetry::inject_span(&span, &mut Headers(&mut headers));
    let mut request = tonic::Request::new(request);
    *request.metadata_mut() = MetadataMap::from_headers(headers);
    let mut client =
        tonic::client::Grpc::new(channel).max_decoding_message_size(bounds.max_result_bytes);
    let codec = DynamicCodec(method.descriptor.output());
    let answered = async {
        client
            .ready()
            .await
            .map_err(|e| CallError::Connect(with_causes(&e)))?;
        if method.server_streaming {
            let stream = client.server_streaming(request, path, codec).await;
            let refused = stream.as_ref().err().is_some_and(refused);
            Ok(ServiceAnswer {
                result: collect(stream, bounds).await?,
                credential_refused: refused,
            })
        } else {
            match client.unary(request, path, codec).await {
                Ok(response) => Ok(answer(unary_result(&response.into_inner()))),
                Err(status) => Ok(ServiceAnswer {
                    result: failed(&status, bounds)?,
                    credential_refused: refused(&status),
                }),
            }
        }
    };
    tokio::time::timeout(timeout, answered.instrument(span))
        .await
        .map_err(|_| CallError::Timeout(timeout))?
}

fn answer(result: CallToolResult) -> ServiceAnswer {
    ServiceAnswer {
        result,
        credential_refused: false,
    }
}

fn refused(status: &Status) -> bool {
    status.code() == Code::Unauthenticated
}

fn unary_result(response: &DynamicMessage) -> CallToolResult {
    let value = message::to_json(response);
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(Value::Object(message::as_object(value)));
    result
}

/// A server-streaming call's messages, up to their bound; the stream is
/// ended there (dropping it cancels the call) and the result says so.
async fn collect(
    stream: Result<tonic::Response<tonic::Streaming<DynamicMessage>>, Status>,
    bounds: CallBounds,
) -> Result<CallToolResult, CallError> {
    let mut stream = match stream {
        Ok(response) => response.into_inner(),
        Err(status) => return failed(&status, bounds),
    };
    let mut messages = Vec::new();
    let mut bytes = 0_usize;
    let mut ended_by = None;
    let truncated = loop {
        match stream.message().await {
            // One past the bound says the stream had more.
            Ok(Some(_)) if messages.len() == bounds.max_stream_messages => break true,
            Ok(Some(message)) => {
                bytes += message.encoded_len();
                if bytes > bounds.max_result_bytes {
                    return Err(CallError::TooLarge {
                        limit: bounds.max_result_bytes,
                    });
                }
                messages.push(message::to_json(&message));
            }
            Ok(None) => break false,
            Err(status) => {
                ended_by = Some(status);
                break false;
            }
        }
    };
    // Dropping the stream cancels what the server would still send.
    drop(stream);
    let mut content = json!({"messages": messages});
    if truncated {
        content["truncated"] = json!(format!(
            "the stream was ended after {} messages, the most a result keeps",
            bounds.max_stream_messages
        ));
    }
    let mut result = match &ended_by {
        Some(status) => failed(status, bounds)?,
        None => CallToolResult::success(vec![ContentBlock::text(content.to_string())]),
    };
    if ended_by.is_some() {
        result.content.push(ContentBlock::text(format!(
            "messages received before the error: {content}"
        )));
    }
    result.structured_content = Some(content);
    Ok(result)
}

/// A status other than OK: a message past the result bound is
/// [`CallError::TooLarge`]; one that never reached the server (no
/// connection) a transport failure; any other the server's answer, for the
/// model to read with its details.
fn failed(status: &Status, bounds: CallBounds) -> Result<CallToolResult, CallError> {
    if status.code() == Code::OutOfRange && status.message().starts_with(TOO_LARGE) {
        return Err(CallError::TooLarge {
            limit: bounds.max_result_bytes,
        });
    }
    if std::error::Error::source(status).is_some() {
        return Err(CallError::Transport(status_with_causes(status)));
    }
    let mut text = format!("gRPC status {:?}: {}", status.code(), status.message());
    let details = status.get_error_details_vec();
    if !details.is_empty() {
        let shown: Vec<String> = details.iter().map(|d| format!("{d:?}")).collect();
        text.push_str(&format!("\ndetails: {}", shown.join("; ")));
    }
    Ok(CallToolResult::error(vec![ContentBlock::text(text)]))
}

/// How tonic's decoder begins the status of a message past the decoding
/// bound.
const TOO_LARGE: &str = "Error, decoded message length too large";

/// Encodes a method's request and decodes its responses as messages of a
/// descriptor known only at run time.
#[derive(Debug, Clone)]
struct DynamicCodec(MessageDescriptor);

impl Codec for DynamicCodec {
    type Encode = DynamicMessage;
    type Decode = DynamicMessage;
    type Encoder = DynamicEncoder;
    type Decoder = DynamicDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        DynamicEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        DynamicDecoder(self.0.clone())
    }
}

#[derive(Debug)]
struct DynamicEncoder;

impl Encoder for DynamicEncoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn encode(&mut self, item: DynamicMessage, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("encoding the request: {e}")))
    }
}

#[derive(Debug)]
struct DynamicDecoder(MessageDescriptor);

impl Decoder for DynamicDecoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<DynamicMessage>, Status> {
        DynamicMessage::decode(self.0.clone(), src)
            .map(Some)
            .map_err(|e| {
                Status::internal(format!("the response is not a {}: {e}", self.0.full_name()))
            })
    }
}
