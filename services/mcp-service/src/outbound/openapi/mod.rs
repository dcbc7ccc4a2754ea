//! The gateway of OpenAPI integrations: the document read into tools
//! (cached per integration and version), each call an HTTP request of its
//! operation to the pinned base URL ([`send`]). An API offers tools only
//! ([`ToolsOnly`]).

mod document;
mod send;

use std::{
    num::NonZeroUsize,
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use hashlink::LruCache;
use rmcp::model::{Tool, ToolAnnotations};

use crate::domain::{
    integration::{Integration, IntegrationId},
    openapi::{ApiDocument, OpenApiLimits, Operation},
    outcome::ToolOutcome,
    ports::{CallError, Discovery, ServerIdentity, SessionScope, ToolCall},
    transport::{OpenApi, Transport},
};
use crate::outbound::{
    gateways::ToolsOnly, oauth::integration_token::IntegrationTokens,
    service_auth::call_with_credential,
};

pub use document::DocumentFetcher;
pub use send::ApiClient;

/// The OpenAPI gateway.
#[derive(Debug)]
pub struct OpenApiGateway {
    client: ApiClient,
    tokens: IntegrationTokens,
    limits: OpenApiLimits,
    /// Read documents, by integration, with the version they were read at;
    /// the least recently used dropped past the bound (and read again when
    /// next needed).
    documents: Mutex<LruCache<IntegrationId, (i64, Arc<Read>)>>,
}

/// A document read, and what discovery offers of it.
#[derive(Debug)]
struct Read {
    document: ApiDocument,
    discovery: Arc<Discovery>,
}

impl OpenApiGateway {
    /// Calls made with `client` carrying `tokens` where the integration
    /// uses OAuth, documents read within `limits`, at most `cached` of them
    /// kept read.
    pub fn new(
        client: ApiClient,
        tokens: IntegrationTokens,
        limits: OpenApiLimits,
        cached: NonZeroUsize,
    ) -> Self {
        Self {
            client,
            tokens,
            limits,
            documents: Mutex::new(LruCache::new(cached.get())),
        }
    }

    /// A fetcher of documents given by URL, with this gateway's client.
    pub fn document_fetcher(&self, timeout: Duration) -> DocumentFetcher {
        self.client.document_fetcher(timeout)
    }

    fn read(&self, integration: &Integration) -> Result<Arc<Read>, CallError> {
        let Transport::OpenApi(api) = &integration.transport else {
            return Err(CallError::Connect("not an OpenAPI integration".to_owned()));
        };
        if let Some((version, read)) = self.documents().get(&integration.id)
            && *version == integration.updated_at
        {
            return Ok(read.clone());
        }
        // Read without the lock: a large document must not hold up calls
        // on other integrations.
        let document = ApiDocument::parse(&api.document, &self.limits)
            .map_err(|e| CallError::Connect(format!("the OpenAPI document: {e}")))?;
        let read = Arc::new(Read {
            discovery: Arc::new(discovery(&document, api)),
            document,
        });
        self.documents()
            .insert(integration.id, (integration.updated_at, read.clone()));
        Ok(read)
    }

    fn documents(&self) -> std::sync::MutexGuard<'_, LruCache<IntegrationId, (i64, Arc<Read>)>> {
        self.documents.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The operations offered (the chosen ones, or all) as tools.
fn discovery(document: &ApiDocument, api: &OpenApi) -> Discovery {
    let chosen = |o: &&Operation| api.operations.is_empty() || api.operations.contains(&o.tool);
    Discovery {
        server: ServerIdentity {
            name: document.title.clone(),
            title: None,
            version: String::new(),
            protocol_version: String::new(),
            instructions: None,
        },
        tools: document
            .operations
            .iter()
            .filter(chosen)
            .map(tool)
            .collect(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        prompts: Vec::new(),
        discovered_at: now_millis(),
        fresh_for: None,
    }
}

/// An operation as a tool: its annotations from HTTP's own semantics
/// (GET, HEAD and OPTIONS are safe; PUT and DELETE idempotent).
fn tool(operation: &Operation) -> Tool {
    let safe = matches!(operation.method.as_str(), "GET" | "HEAD" | "OPTIONS");
    let idempotent = safe || matches!(operation.method.as_str(), "PUT" | "DELETE");
    Tool::new(
        operation.tool.clone(),
        operation.description.clone(),
        Arc::new(operation.input_schema.clone()),
    )
    .annotate(
        ToolAnnotations::new()
            .read_only(safe)
            .destructive(!safe)
            .idempotent(idempotent)
            .open_world(true),
    )
}

/// Now, in milliseconds since the epoch.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[async_trait]
impl ToolsOnly for OpenApiGateway {
    fn kind(&self) -> &'static str {
        "an OpenAPI integration"
    }

    async fn discover(
        &self,
        integration: &Integration,
        _timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError> {
        Ok(self.read(integration)?.discovery.clone())
    }

    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError> {
        let Transport::OpenApi(api) = &integration.transport else {
            return Err(CallError::Connect("not an OpenAPI integration".to_owned()));
        };
        let read = self.read(integration)?;
        let offered = read
            .discovery
            .tools
            .iter()
            .any(|t| t.name == call.name.as_str());
        let operation = read
            .document
            .operation(call.name.as_str())
            .filter(|_| offered)
            .ok_or_else(|| CallError::Upstream {
                code: -32602,
                message: format!("unknown tool: {}", call.name.as_str()),
            })?;
        call_with_credential(integration, &scope.user, &self.tokens, async |credential| {
            self.client
                .call(
                    credential,
                    &api.base_url,
                    operation,
                    &call.arguments,
                    timeout,
                )
                .await
        })
        .await
    }

    async fn forget(&self, integration: IntegrationId) {
        self.documents().remove(&integration);
    }
}
