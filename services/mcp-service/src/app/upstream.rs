//! The gateway to MCP servers: its connector, transports and sessions.

use super::*;

/// The MCP gateway: sessions pooled within their limits, discovery cached,
/// results and listings bounded; and where its servers' list changes and
/// questions go, on their way to the endpoint's clients.
pub(super) fn gateway(
    config: &Config,
    connector: McpConnector,
    shared: &Arc<SharedSessions>,
    policy: &Arc<ConfigPolicy>,
    flows: &AuthorizationCodeFlows,
) -> anyhow::Result<(Arc<Gateways>, Downstream)> {
    // A team's own services carry the authorization code flow's tokens
    // too; an MCP server's sessions take theirs from the connector.
    let tokens = connector.tokens().with_flows(flows.clone());
    let tasks = config.task_polling()?;
    let limits = PoolLimits {
        max_sessions: config.max_sessions,
        max_sessions_per_org: config.max_sessions_per_org,
        max_stdio_sessions_per_org: config.max_stdio_sessions_per_org,
        idle_timeout: config.session_idle_timeout,
    };
    let downstream = config.endpoint.downstream();
    let gateway = RmcpGateway::new(
        connector,
        SessionPool::new(limits, shared.clone()),
        DiscoveryCache::new(config.discovery_ttl),
        GatewayLimits {
            max_result_bytes: config.max_result_bytes,
            max_server_text_bytes: config.max_server_text_bytes,
            discovery: DiscoveryLimits {
                max_pages: config.discovery_max_pages,
                max_items: config.discovery_max_items,
                max_bytes: config.discovery_max_bytes,
            },
            elicitation: config.elicitation,
            tasks,
        },
    )
    .with_downstream(downstream.clone());
    let gateways = Gateways::new(
        Arc::new(gateway),
        openapi_gateway(config, policy, tokens.clone())?,
        grpc_gateway(config, policy, tokens)?,
    );
    Ok((Arc::new(gateways), downstream))
}

/// The gateway of OpenAPI integrations: an HTTP client under the address
/// policy that follows no redirect.
fn openapi_gateway(
    config: &Config,
    policy: &Arc<ConfigPolicy>,
    tokens: IntegrationTokens,
) -> anyhow::Result<OpenApiGateway> {
    let addresses = Arc::new(policy.addresses.clone());
    let extra_roots = match &config.tls_ca_file {
        Some(path) => read_roots(path).context("SWITCHBOARD_MCP_TLS_CA_FILE")?,
        None => Vec::new(),
    };
    let http = build_client_without_redirects(
        addresses.clone(),
        &HttpClientOptions {
            connect_timeout: config.connect_timeout,
            max_redirects: 0,
            extra_roots,
            pool_idle_timeout: config.pool_idle_timeout,
        },
    )
    .context("failed to build the HTTP client of OpenAPI integrations")?;
    Ok(OpenApiGateway::new(
        ApiClient::new(http, addresses, config.max_result_bytes),
        tokens,
        policy.openapi,
        config.openapi.documents_cached(),
    ))
}

/// The gateway of gRPC integrations: channels under the address policy,
/// trusting the deployment's extra certificate authorities.
fn grpc_gateway(
    config: &Config,
    policy: &Arc<ConfigPolicy>,
    tokens: IntegrationTokens,
) -> anyhow::Result<GrpcGateway> {
    let extra_roots =
        match &config.tls_ca_file {
            Some(path) => Some(std::fs::read(path).with_context(|| {
                format!("SWITCHBOARD_MCP_TLS_CA_FILE: reading {}", path.display())
            })?),
            None => None,
        };
    Ok(GrpcGateway::new(
        ChannelSettings {
            policy: Arc::new(policy.addresses.clone()),
            connect_timeout: config.connect_timeout,
            extra_roots,
        },
        tokens,
        policy.grpc,
        config.max_result_bytes,
        config.grpc.services_cached(),
    ))
}

/// How mcp-service reaches MCP servers: one HTTP client under the address
/// policy, OAuth for the integrations that use it, and the connect limits.
pub(super) fn connector(
    config: &Config,
    policy: &Arc<ConfigPolicy>,
    pool: &sqlx::AnyPool,
    keys: Arc<KeyRing>,
) -> anyhow::Result<(McpConnector, AuthorizationCodeFlows)> {
    // TLS to MCP servers uses ring; the provider is process-wide.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let addresses = Arc::new(policy.addresses.clone());
    let extra_roots = match &config.tls_ca_file {
        Some(path) => read_roots(path).context("SWITCHBOARD_MCP_TLS_CA_FILE")?,
        None => Vec::new(),
    };
    let http = build_client(
        addresses.clone(),
        &HttpClientOptions {
            connect_timeout: config.connect_timeout,
            max_redirects: 5,
            extra_roots: extra_roots.clone(),
            pool_idle_timeout: config.pool_idle_timeout,
        },
    )
    .context("failed to build the outbound HTTP client")?;
    let oauth_http = policy_oauth_http(config, &addresses, &extra_roots, http.clone())?;
    let flows = authorization_flows(
        config,
        &addresses,
        oauth_http.clone(),
        http.clone(),
        pool,
        keys,
    );
    let tokens = OAuthTokens::new(http.clone(), addresses)
        .with_max_response_bytes(config.oauth_max_token_response_bytes)
        .with_discovery(oauth_http)
        .with_workload_token(WorkloadToken {
            file: config.workload_identity_token_file.clone(),
            max_bytes: config.workload_identity_token_max_bytes,
        });
    let connector = McpConnector::new(
        http,
        policy.clone(),
        tokens,
        flows.clone(),
        ConnectDefaults {
            connect_timeout: config.connect_timeout,
            call_timeout: config.call_timeout,
            standalone_stream_wait: config.standalone_stream_wait,
            // Room for the result plus its JSON-RPC envelope.
            max_message_bytes: config.max_result_bytes.saturating_mul(2),
        },
    )
    .with_exchanged_tokens(ExchangedTokens::new(
        usize::try_from(config.exchanged_token_cache_entries)
            .ok()
            .and_then(std::num::NonZeroUsize::new)
            .unwrap_or(std::num::NonZeroUsize::MIN),
    ));
    Ok((connector, flows))
}
