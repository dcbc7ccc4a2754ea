//! A gRPC server's schema asked of its reflection service
//! (`grpc.reflection.v1`): the services it lists (or the ones chosen), the
//! files declaring them and every file those import, gathered on one
//! stream into a `FileDescriptorSet`. What the server sends is bounded by
//! the descriptor bound, in bytes together, and each file is asked for at
//! most once, so a server cannot keep the exchange going.

use std::collections::{BTreeSet, HashSet, VecDeque};

use prost::Message as _;
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

use super::status_with_causes;
use crate::domain::{grpc::GrpcLimits, ports::CallError};

/// The reflection services themselves, never offered as tools.
const REFLECTION: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// The encoded descriptor set of the services `selection` names (all the
/// server lists when it is empty), asked on `channel`.
pub async fn descriptor_set(
    channel: Channel,
    selection: &[String],
    limits: &GrpcLimits,
) -> Result<Vec<u8>, CallError> {
    let mut exchange = Exchange::open(channel, limits).await?;
    let services: BTreeSet<String> = if selection.is_empty() {
        exchange.services(limits).await?
    } else {
        selection
            .iter()
            .map(|entry| {
                entry
                    .split_once('/')
                    .map_or(entry.as_str(), |(s, _)| s)
                    .to_owned()
            })
            .collect()
    };
    let mut files: Vec<FileDescriptorProto> = Vec::new();
    let mut bytes = 0_usize;
    let mut asked: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<MessageRequest> = services
        .into_iter()
        .map(MessageRequest::FileContainingSymbol)
        .collect();
    while let Some(request) = queue.pop_front() {
        for encoded in exchange.files(request).await? {
            bytes += encoded.len();
            if bytes > limits.max_descriptor_bytes {
                return Err(refused(format!(
                    "its files are more than {} bytes",
                    limits.max_descriptor_bytes
                )));
            }
            let file = FileDescriptorProto::decode(encoded.as_slice())
                .map_err(|e| refused(format!("sent a file that is not a descriptor: {e}")))?;
            if files.iter().any(|f| f.name == file.name) {
                continue;
            }
            asked.insert(file.name().to_owned());
            for dependency in &file.dependency {
                if asked.insert(dependency.clone()) {
                    queue.push_back(MessageRequest::FileByFilename(dependency.clone()));
                }
            }
            files.push(file);
        }
    }
    Ok(FileDescriptorSet { file: files }.encode_to_vec())
}

fn refused(why: String) -> CallError {
    CallError::Connect(format!("the server's reflection: {why}"))
}

/// One reflection stream: a request sent, its answer read.
struct Exchange {
    requests: mpsc::Sender<ServerReflectionRequest>,
    answers: tonic::Streaming<tonic_reflection::pb::v1::ServerReflectionResponse>,
}

impl Exchange {
    async fn open(channel: Channel, limits: &GrpcLimits) -> Result<Self, CallError> {
        let mut client = ServerReflectionClient::new(channel)
            .max_decoding_message_size(limits.max_descriptor_bytes);
        let (requests, receiver) = mpsc::channel(1);
        let answers = client
            .server_reflection_info(ReceiverStream::new(receiver))
            .await
            .map_err(|status| refused(status_with_causes(&status)))?
            .into_inner();
        Ok(Self { requests, answers })
    }

    async fn ask(&mut self, request: MessageRequest) -> Result<MessageResponse, CallError> {
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(request),
        };
        self.requests
            .send(request)
            .await
            .map_err(|_| refused("the stream ended".to_owned()))?;
        let answer = self
            .answers
            .message()
            .await
            .map_err(|status| refused(status_with_causes(&status)))?
            .ok_or_else(|| refused("the stream ended".to_owned()))?;
        match answer.message_response {
            Some(MessageResponse::ErrorResponse(error)) => Err(refused(error.error_message)),
            Some(response) => Ok(response),
            None => Err(refused("an empty answer".to_owned())),
        }
    }

    /// The services the server lists, the reflection services left out,
    /// at most as many as methods may be.
    async fn services(&mut self, limits: &GrpcLimits) -> Result<BTreeSet<String>, CallError> {
        let MessageResponse::ListServicesResponse(list) = self
            .ask(MessageRequest::ListServices(String::new()))
            .await?
        else {
            return Err(refused("answered a listing with something else".to_owned()));
        };
        if list.service.len() > limits.max_methods {
            return Err(refused(format!(
                "lists {} services, more than {}",
                list.service.len(),
                limits.max_methods
            )));
        }
        Ok(list
            .service
            .into_iter()
            .map(|s| s.name)
            .filter(|name| !REFLECTION.contains(&name.as_str()))
            .collect())
    }

    async fn files(&mut self, request: MessageRequest) -> Result<Vec<Vec<u8>>, CallError> {
        match self.ask(request).await? {
            MessageResponse::FileDescriptorResponse(files) => Ok(files.file_descriptor_proto),
            _ => Err(refused(
                "answered a file request with something else".to_owned(),
            )),
        }
    }
}
