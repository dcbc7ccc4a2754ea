//! [`McpGateway`] over `rmcp`: calls on pooled sessions, discovery through a
//! cache, results handed back as MCP wire JSON.
//!
//! Results cross into the domain as the protocol's JSON rather than as rmcp's
//! structs: the wire format is the stable contract, rmcp's types change
//! between releases.

use std::{future::Future, sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::{
    ServiceError,
    model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams},
};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::{
    mcp_client::{McpConnector, client_config},
    sessions::{DiscoveryCache, Live, SessionHandler, SessionKey, SessionPool},
};
use crate::domain::{
    integration::{Integration, IntegrationId},
    ports::{CallError, Discovery, McpGateway, ProbeReport, ServerIdentity, SessionScope},
};

/// Sessions used for discovery, shared by every caller of an organization's
/// integration: listing capabilities carries no conversation state.
const DISCOVERY_SCOPE: &str = "discovery";

/// The `rmcp` implementation of [`McpGateway`].
#[derive(Debug, Clone)]
pub struct RmcpGateway {
    connector: McpConnector,
    pool: SessionPool,
    cache: DiscoveryCache,
    max_result_bytes: usize,
}

fn upstream(error: ServiceError) -> CallError {
    match error {
        ServiceError::McpError(data) => CallError::Upstream {
            code: data.code.0,
            message: data.message.into_owned(),
        },
        ServiceError::Timeout { timeout } => CallError::Timeout(timeout),
        other => CallError::Transport(other.to_string()),
    }
}

/// A session failed before the request could have reached the server: the
/// call is safe to retry on a new session.
fn never_delivered(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportSend(_) | ServiceError::TransportClosed
    )
}

fn json_items<T: Serialize>(items: Vec<T>) -> Vec<Value> {
    items
        .iter()
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect()
}

/// Counts the bytes written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(bytes.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<Value, CallError> {
    serde_json::to_value(value).map_err(|e| CallError::Transport(format!("unreadable result: {e}")))
}

impl RmcpGateway {
    /// A gateway opening sessions with `connector` into `pool`.
    pub fn new(
        connector: McpConnector,
        pool: SessionPool,
        cache: DiscoveryCache,
        max_result_bytes: usize,
    ) -> Self {
        Self {
            connector,
            pool,
            cache,
            max_result_bytes,
        }
    }

    /// Sessions opened so far.
    pub fn sessions_opened(&self) -> u64 {
        self.pool.opened()
    }

    fn handler(&self, integration: &Integration) -> SessionHandler {
        SessionHandler::new(client_config(), integration.id, self.cache.clone())
    }

    async fn connect(&self, integration: &Integration) -> Result<Live, String> {
        self.connector
            .connect(integration, self.handler(integration))
            .await
    }

    /// Runs `op` on the scope's session within `timeout`. A session that
    /// turns out dead before the request left is replaced and the call made
    /// once more; on timeout the call is dropped, which sends the server a
    /// cancellation.
    async fn on_session<T, F, Fut>(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        timeout: Duration,
        op: F,
    ) -> Result<T, CallError>
    where
        F: Fn(Arc<Live>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let key = SessionKey::new(integration, scope);
        let attempts = async {
            for attempt in 0..2 {
                let (slot, live) = self
                    .pool
                    .get(&key, || self.connect(integration))
                    .await
                    .map_err(CallError::Connect)?;
                match op(live).await {
                    Err(error) if never_delivered(&error) => {
                        self.pool.discard(&key, &slot);
                        tracing::info!(
                            integration_id = %integration.id,
                            attempt,
                            error = %error,
                            "MCP session lost; reconnecting"
                        );
                        if attempt == 1 {
                            return Err(upstream(error));
                        }
                    }
                    result => return result.map_err(upstream),
                }
            }
            Err(CallError::Transport(
                "the MCP session could not be re-established".into(),
            ))
        };
        tokio::time::timeout(timeout, attempts)
            .await
            .map_err(|_| CallError::Timeout(timeout))?
    }

    fn check_size(&self, value: Value) -> Result<Value, CallError> {
        // Counted as it is written out, without holding the encoded copy.
        let mut counter = ByteCounter(0);
        let size = serde_json::to_writer(&mut counter, &value).map_or(usize::MAX, |()| counter.0);
        if size > self.max_result_bytes {
            Err(CallError::TooLarge {
                size,
                limit: self.max_result_bytes,
            })
        } else {
            Ok(value)
        }
    }

    async fn list_everything(
        &self,
        live: &Live,
        discovery: &mut Discovery,
    ) -> Result<(), ServiceError> {
        let session = &live.session;
        let Some(info) = session.peer_info() else {
            return Err(ServiceError::UnexpectedResponse);
        };
        let implementation = info.server_info.clone().unwrap_or_default();
        discovery.server = ServerIdentity {
            name: implementation.name,
            title: implementation.title,
            version: implementation.version,
            protocol_version: info.protocol_version.to_string(),
            instructions: info.instructions.clone(),
        };
        // The listings are independent: asked at once, discovery takes as
        // long as the slowest of them, not their sum.
        let capabilities = &info.capabilities;
        let (tools, (resources, resource_templates), prompts) = tokio::try_join!(
            async {
                match capabilities.tools {
                    Some(_) => session.list_all_tools().await.map(json_items),
                    None => Ok(Vec::new()),
                }
            },
            async {
                match capabilities.resources {
                    Some(_) => tokio::try_join!(
                        async { session.list_all_resources().await.map(json_items) },
                        async { session.list_all_resource_templates().await.map(json_items) },
                    ),
                    None => Ok((Vec::new(), Vec::new())),
                }
            },
            async {
                match capabilities.prompts {
                    Some(_) => session.list_all_prompts().await.map(json_items),
                    None => Ok(Vec::new()),
                }
            },
        )?;
        discovery.tools = tools;
        discovery.resources = resources;
        discovery.resource_templates = resource_templates;
        discovery.prompts = prompts;
        discovery.discovered_at = switchboard_db::now_millis();
        Ok(())
    }
}

#[async_trait]
impl McpGateway for RmcpGateway {
    async fn probe(&self, integration: &Integration) -> ProbeReport {
        let started = Instant::now();
        let mut report = ProbeReport::default();
        let (_, call_timeout) = self.connector.timeouts(integration);
        match self.connect(integration).await {
            Err(error) => report.error = Some(error),
            Ok(live) => {
                let mut discovery = Discovery::default();
                match tokio::time::timeout(
                    call_timeout,
                    self.list_everything(&live, &mut discovery),
                )
                .await
                {
                    Err(_) => {
                        report.error = Some(format!(
                            "listing capabilities timed out after {call_timeout:?}"
                        ));
                    }
                    Ok(Err(error)) => {
                        report.error = Some(format!("listing capabilities failed: {error}"))
                    }
                    Ok(Ok(())) => {}
                }
                report.tool_count = discovery.tools.len();
                report.resource_count = discovery.resources.len();
                report.resource_template_count = discovery.resource_templates.len();
                report.prompt_count = discovery.prompts.len();
                report.server = Some(discovery.server);
                let Live { session, child } = live;
                let _ = session.cancel().await;
                drop(child);
            }
        }
        report.latency = started.elapsed();
        report
    }

    async fn discover(
        &self,
        integration: &Integration,
        bypass_cache: bool,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError> {
        if !bypass_cache && let Some(cached) = self.cache.get(integration) {
            return Ok(cached);
        }
        let scope = SessionScope(DISCOVERY_SCOPE.into());
        let discovery = Arc::new(
            self.on_session(integration, &scope, timeout, |live| async move {
                let mut discovery = Discovery::default();
                self.list_everything(&live, &mut discovery).await?;
                Ok(discovery)
            })
            .await?,
        );
        self.cache.put(integration, discovery.clone());
        Ok(discovery)
    }

    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result = self
            .on_session(integration, scope, timeout, |live| {
                let params = params.clone();
                async move { live.session.peer().call_tool(params).await }
            })
            .await?;
        self.check_size(to_json(&result)?)
    }

    async fn read_resource(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        uri: &str,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let result = self
            .on_session(integration, scope, timeout, |live| {
                let params = ReadResourceRequestParams::new(uri.to_owned());
                async move { live.session.peer().read_resource(params).await }
            })
            .await?;
        self.check_size(to_json(&result)?)
    }

    async fn get_prompt(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let result = self
            .on_session(integration, scope, timeout, |live| {
                let mut params = GetPromptRequestParams::new(name.to_owned());
                params.arguments = Some(arguments.clone());
                async move { live.session.peer().get_prompt(params).await }
            })
            .await?;
        self.check_size(to_json(&result)?)
    }

    async fn forget(&self, integration: IntegrationId) {
        self.pool.forget(integration);
        self.cache.invalidate(integration);
    }
}
