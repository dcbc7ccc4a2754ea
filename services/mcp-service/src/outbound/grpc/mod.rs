//! The gateway of gRPC integrations: the service's schema (uploaded, or
//! asked of its reflection) read into tools and kept with the channel per
//! integration and version, each call one method's request on that channel
//! ([`call`]). A gRPC service offers tools only ([`ToolsOnly`]).

mod call;
mod channel;
mod reflection;

use std::{
    num::NonZeroUsize,
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use hashlink::LruCache;
use rmcp::model::{Tool, ToolAnnotations};
use tonic::transport::Channel;

use crate::domain::{
    grpc::{GrpcLimits, Method, ServiceSchema},
    integration::{Integration, IntegrationId, Secrets},
    outcome::ToolOutcome,
    ports::{CallError, Discovery, ServerIdentity, SessionScope, ToolCall},
    transport::Transport,
};
use crate::outbound::{
    gateways::ToolsOnly, oauth::integration_token::IntegrationTokens, openapi::now_millis,
    service_auth::call_with_credential,
};

pub use call::CallBounds;

pub use channel::ChannelSettings;

/// The gRPC gateway.
#[derive(Debug)]
pub struct GrpcGateway {
    channels: ChannelSettings,
    tokens: IntegrationTokens,
    limits: GrpcLimits,
    max_result_bytes: usize,
    /// Read services, by integration, with the version they were read at;
    /// the least recently used dropped past the bound.
    services: Mutex<LruCache<IntegrationId, (i64, Arc<Read>)>>,
}

/// A service read: its channel, its schema, what discovery offers of it.
#[derive(Debug)]
struct Read {
    channel: Channel,
    schema: ServiceSchema,
    discovery: Arc<Discovery>,
}

impl GrpcGateway {
    /// Channels made with `channels`, calls carrying `tokens` where the
    /// integration uses OAuth, descriptors read within `limits`, results
    /// bounded by `max_result_bytes`, at most `cached` services kept read.
    pub fn new(
        channels: ChannelSettings,
        tokens: IntegrationTokens,
        limits: GrpcLimits,
        max_result_bytes: usize,
        cached: NonZeroUsize,
    ) -> Self {
        Self {
            channels,
            tokens,
            limits,
            max_result_bytes,
            services: Mutex::new(LruCache::new(cached.get())),
        }
    }

    async fn read(
        &self,
        integration: &Integration,
        timeout: Duration,
    ) -> Result<Arc<Read>, CallError> {
        let Transport::Grpc(grpc) = &integration.transport else {
            return Err(CallError::Connect("not a gRPC integration".to_owned()));
        };
        if let Some((version, read)) = self.services().get(&integration.id)
            && *version == integration.updated_at
        {
            return Ok(read.clone());
        }
        // Read without the lock: reflection waits on the server, and a
        // large set must not hold up calls on other integrations.
        let key = integration.secrets.get(Secrets::GRPC_CLIENT_KEY);
        let channel = channel::channel(grpc, key, &self.channels)?;
        let descriptors = if grpc.descriptor_set.is_empty() {
            let asked = reflection::descriptor_set(channel.clone(), &grpc.methods, &self.limits);
            tokio::time::timeout(timeout, asked)
                .await
                .map_err(|_| CallError::Timeout(timeout))??
        } else {
            grpc.descriptor_set.clone()
        };
        let schema = ServiceSchema::read(&descriptors, &grpc.methods, &self.limits)
            .map_err(|e| CallError::Connect(format!("the service's descriptors: {e}")))?;
        let read = Arc::new(Read {
            discovery: Arc::new(discovery(&schema)),
            channel,
            schema,
        });
        self.services()
            .insert(integration.id, (integration.updated_at, read.clone()));
        Ok(read)
    }

    fn services(&self) -> std::sync::MutexGuard<'_, LruCache<IntegrationId, (i64, Arc<Read>)>> {
        self.services.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The methods offered as tools.
fn discovery(schema: &ServiceSchema) -> Discovery {
    Discovery {
        server: ServerIdentity {
            name: schema.services.join(", "),
            title: None,
            version: String::new(),
            protocol_version: String::new(),
            instructions: None,
        },
        tools: schema.methods.iter().map(tool).collect(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        prompts: Vec::new(),
        discovered_at: now_millis(),
        fresh_for: None,
    }
}

/// A method as a tool. gRPC says nothing of a method's effects, so none is
/// claimed: a tool is taken as one that may change things.
fn tool(method: &Method) -> Tool {
    Tool::new(
        method.tool.clone(),
        method.description.clone(),
        Arc::new(method.input_schema.clone()),
    )
    .annotate(ToolAnnotations::new().open_world(true))
}

#[async_trait]
impl ToolsOnly for GrpcGateway {
    fn kind(&self) -> &'static str {
        "a gRPC integration"
    }

    async fn discover(
        &self,
        integration: &Integration,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError> {
        Ok(self.read(integration, timeout).await?.discovery.clone())
    }

    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError> {
        let read = self.read(integration, timeout).await?;
        let method = read
            .schema
            .method(call.name.as_str())
            .ok_or_else(|| CallError::Upstream {
                code: -32602,
                message: format!("unknown tool: {}", call.name.as_str()),
            })?;
        let bounds = CallBounds {
            max_result_bytes: self.max_result_bytes,
            max_stream_messages: self.limits.max_stream_messages,
        };
        call_with_credential(integration, &scope.user, &self.tokens, async |credential| {
            let headers = credential.into_headers()?;
            call::call(
                read.channel.clone(),
                headers,
                method,
                &call.arguments,
                bounds,
                timeout,
            )
            .await
        })
        .await
    }

    async fn forget(&self, integration: IntegrationId) {
        self.services().remove(&integration);
    }
}

/// `error` and its sources, each once: a transport failure's top level
/// ("transport error") says nothing of why (a refused handshake, a
/// certificate not trusted).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    said_with_causes(error.to_string(), error.source())
}

/// A status's message and its sources (a status's own text also lists
/// its metadata and details).
fn status_with_causes(status: &tonic::Status) -> String {
    said_with_causes(
        status.message().to_owned(),
        std::error::Error::source(status),
    )
}

fn said_with_causes(
    mut text: String,
    mut source: Option<&(dyn std::error::Error + 'static)>,
) -> String {
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}
