//! Transports between the contract's messages and the domain: each kind
//! of integration's `Transport` oneof, secrets write-only.

use secrecy::SecretString;
use switchboard_proto::mcp::v1 as pb;
use switchboard_server::FieldViolation;

use crate::domain::transport::{Grpc, OpenApi, Stdio, StreamableHttp, Transport, TransportInput};

pub(crate) fn transport_input(
    field: &str,
    transport: Option<pb::Transport>,
) -> Result<TransportInput, FieldViolation> {
    match transport.and_then(|t| t.kind) {
        None => Err(FieldViolation::new(field, "is required")),
        Some(pb::transport::Kind::StreamableHttp(http)) => Ok(TransportInput::new(
            Transport::StreamableHttp(StreamableHttp { url: http.url }),
        )),
        Some(pb::transport::Kind::Openapi(api)) => {
            Ok(TransportInput::new(Transport::OpenApi(OpenApi {
                base_url: api.base_url,
                document: api.document,
                document_url: Some(api.document_url).filter(|url| !url.is_empty()),
                operations: api.operations,
            })))
        }
        Some(pb::transport::Kind::Grpc(grpc)) => Ok(TransportInput {
            client_key: Some(SecretString::from(grpc.client_key)),
            ..TransportInput::new(Transport::Grpc(Grpc {
                target: grpc.target,
                descriptor_set: grpc.descriptor_set,
                methods: grpc.methods,
                ca_certificate: grpc.ca_certificate,
                client_certificate: grpc.client_certificate,
                client_key_set: false,
            }))
        }),
        Some(pb::transport::Kind::Stdio(stdio)) => Ok(TransportInput::stdio(
            stdio.command,
            stdio.args,
            stdio.env.into_iter().collect(),
            stdio
                .secret_env
                .into_iter()
                .map(|(k, v)| (k, SecretString::from(v)))
                .collect(),
        )),
    }
}

/// A client authentication method as the API shows it, with its signing
/// algorithm (empty but for `private_key_jwt`).
/// The stored transport as the contract shows it: secret values never.
pub(super) fn proto_transport(transport: &Transport) -> pb::Transport {
    let kind = match transport {
        Transport::StreamableHttp(StreamableHttp { url }) => {
            pb::transport::Kind::StreamableHttp(pb::StreamableHttpTransport { url: url.clone() })
        }
        Transport::Stdio(Stdio {
            command,
            args,
            env,
            secret_env_names,
        }) => pb::transport::Kind::Stdio(pb::StdioTransport {
            command: command.clone(),
            args: args.clone(),
            env: env.clone().into_iter().collect(),
            secret_env: Default::default(),
            secret_env_names: secret_env_names.clone(),
        }),
        Transport::OpenApi(OpenApi {
            base_url,
            document,
            document_url,
            operations,
        }) => pb::transport::Kind::Openapi(pb::OpenApiTransport {
            base_url: base_url.clone(),
            document: document.clone(),
            operations: operations.clone(),
            document_url: document_url.clone().unwrap_or_default(),
        }),
        Transport::Grpc(grpc) => pb::transport::Kind::Grpc(pb::GrpcTransport {
            target: grpc.target.clone(),
            descriptor_set: grpc.descriptor_set.clone(),
            methods: grpc.methods.clone(),
            ca_certificate: grpc.ca_certificate.clone(),
            client_certificate: grpc.client_certificate.clone(),
            client_key: String::new(),
            client_key_set: grpc.client_key_set,
        }),
    };
    pb::Transport { kind: Some(kind) }
}
