//! gRPC clients of both services, with the bearer token on every call.

use std::time::Duration;

use switchboard_proto::{
    mcp::v1::{
        approval_service_client::ApprovalServiceClient, audit_service_client::AuditServiceClient,
        mcp_service_client::McpServiceClient, policy_service_client::PolicyServiceClient,
        toolsets_service_client::ToolsetsServiceClient,
    },
    runs::v1::runs_service_client::RunsServiceClient,
};
use tonic::{
    Request, Status,
    metadata::{Ascii, MetadataValue},
    service::{Interceptor, interceptor::InterceptedService},
    transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity},
};

use crate::{
    config::{Settings, TlsFiles},
    error::CliError,
};

/// Largest message accepted from a service (the services' own default cap).
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How long opening a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Adds `authorization: Bearer …` to every request.
#[derive(Debug, Clone)]
pub struct BearerAuth(MetadataValue<Ascii>);

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

/// A client of mcp-service.
pub type McpClient = McpServiceClient<InterceptedService<Channel, BearerAuth>>;
/// A client of mcp-service's policies.
pub type PolicyClient = PolicyServiceClient<InterceptedService<Channel, BearerAuth>>;
/// A client of mcp-service's audit trail.
pub type AuditClient = AuditServiceClient<InterceptedService<Channel, BearerAuth>>;
/// A client of mcp-service's approvals.
pub type ApprovalClient = ApprovalServiceClient<InterceptedService<Channel, BearerAuth>>;
/// A client of mcp-service's toolsets.
pub type ToolsetsClient = ToolsetsServiceClient<InterceptedService<Channel, BearerAuth>>;
/// A client of runs-service.
pub type RunsClient = RunsServiceClient<InterceptedService<Channel, BearerAuth>>;

/// Both clients, connected lazily: a service is dialled at its first call.
#[derive(Debug, Clone)]
pub struct Clients {
    settings: Settings,
    auth: BearerAuth,
}

impl Clients {
    /// Clients for `settings`; fails without a token.
    pub fn new(settings: Settings) -> Result<Self, CliError> {
        let token = settings.token.as_deref().ok_or(CliError::NoToken)?;
        let value = format!("Bearer {token}").parse().map_err(|_| {
            CliError::Usage("the token holds characters a header cannot carry".into())
        })?;
        Ok(Self {
            settings,
            auth: BearerAuth(value),
        })
    }

    /// A client of mcp-service.
    pub fn mcp(&self) -> Result<McpClient, CliError> {
        let channel = channel(&self.settings.mcp_addr, &self.settings.tls)?;
        Ok(
            McpServiceClient::with_interceptor(channel, self.auth.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
    }

    /// A client of mcp-service's policies.
    pub fn policies(&self) -> Result<PolicyClient, CliError> {
        let channel = channel(&self.settings.mcp_addr, &self.settings.tls)?;
        Ok(
            PolicyServiceClient::with_interceptor(channel, self.auth.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
    }

    /// A client of mcp-service's audit trail.
    pub fn audit(&self) -> Result<AuditClient, CliError> {
        let channel = channel(&self.settings.mcp_addr, &self.settings.tls)?;
        Ok(
            AuditServiceClient::with_interceptor(channel, self.auth.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
    }

    /// A client of mcp-service's approvals.
    pub fn approvals(&self) -> Result<ApprovalClient, CliError> {
        let channel = channel(&self.settings.mcp_addr, &self.settings.tls)?;
        Ok(
            ApprovalServiceClient::with_interceptor(channel, self.auth.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
    }

    /// A client of mcp-service's toolsets.
    pub fn toolsets(&self) -> Result<ToolsetsClient, CliError> {
        let channel = channel(&self.settings.mcp_addr, &self.settings.tls)?;
        Ok(
            ToolsetsServiceClient::with_interceptor(channel, self.auth.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
    }

    /// A client of runs-service.
    pub fn runs(&self) -> Result<RunsClient, CliError> {
        let channel = channel(&self.settings.runs_addr, &self.settings.tls)?;
        Ok(
            RunsServiceClient::with_interceptor(channel, self.auth.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
    }

    /// A request carrying the unary deadline.
    pub fn unary<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request.set_timeout(self.settings.timeout);
        request
    }
}

/// A lazy channel to `addr`; an `https://` address is verified against the
/// system's trusted roots and the CA file, and is shown the client
/// certificate when one is given.
fn channel(addr: &str, tls: &TlsFiles) -> Result<Channel, CliError> {
    let mut endpoint = Endpoint::from_shared(addr.to_owned())
        .map_err(|error| CliError::Usage(format!("address {addr:?}: {error}")))?
        .connect_timeout(CONNECT_TIMEOUT);
    if addr.starts_with("https://") {
        let mut config = ClientTlsConfig::new().with_native_roots();
        if let Some(ca) = &tls.ca_pem {
            config = config.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &tls.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        endpoint = endpoint
            .tls_config(config)
            .map_err(|error| CliError::Usage(format!("address {addr:?}: {error}")))?;
    }
    Ok(endpoint.connect_lazy())
}
