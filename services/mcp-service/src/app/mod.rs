//! Wiring: storage, adapters, the gRPC server and the MCP endpoint.

mod unpinned;
mod upstream;

use self::upstream::{connector, gateway};
use std::{future::Future, net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use switchboard_auth::Authenticator;
use switchboard_db::request_ids::RequestIds;
use switchboard_db::{Backend, Database};
use switchboard_proto::mcp::v1::{
    approval_service_server::ApprovalServiceServer, audit_service_server::AuditServiceServer,
    mcp_service_server::McpServiceServer, policy_service_server::PolicyServiceServer,
    toolsets_service_server::ToolsetsServiceServer,
};
use switchboard_server::{
    CallLimits, GrantSettings, GrantedSlots, Idempotency, MemorySlotGrants, PgSlotGrants,
    RunningServer, Services, SlotGrants,
};
use tokio_util::sync::CancellationToken;

use crate::{
    Config,
    domain::{
        address_policy::AddressPolicy,
        approvals::service::Approvals,
        audit::{
            AuditLog, Auditor, calls::AuditedCalls, changes::IntegrationChanges, trail::AuditTrail,
        },
        calls::CallService,
        downstream::Downstream,
        integration::Timeouts,
        policy::{engine::PolicyEngine, service::PolicyAdmin},
        resolve::ConfigPolicy,
        service::IntegrationService,
        toolset::{admin::ToolsetAdmin, serve::ToolsetResolver},
    },
    inbound::{
        ApprovalApi, AuditApi, McpApi, PolicyApi, ResumeSeal, ToolsetsApi,
        mcp_server::{Admission, EndpointParts, McpEndpoint},
    },
    outbound::{
        gateways::Gateways,
        grpc::{ChannelSettings, GrpcGateway},
        http::{HttpClientOptions, build_client, build_client_without_redirects, read_roots},
        mcp::{
            connect::{ConnectDefaults, McpConnector},
            discovery::DiscoveryLimits,
            gateway::{GatewayLimits, RmcpGateway},
            session_pool::{PoolLimits, SessionPool, SessionQuotas, SharedSessions},
            sessions::DiscoveryCache,
        },
        oauth::integration_token::IntegrationTokens,
        oauth::{
            authorization_code::AuthorizationCodeFlows, client_credentials::OAuthTokens,
            http::PolicyOAuthHttp, on_behalf_of::ExchangedTokens, store::SqlOAuthStore,
            token_request::WorkloadToken,
        },
        openapi::{ApiClient, OpenApiGateway},
        storage::{
            approvals::SqlApprovalRepository,
            audit::SqlAuditLog,
            audit_writer::{BatchShape, BatchingAuditLog},
            endpoint_sessions::SqlEndpointSessions,
            policies::SqlPolicyRepository,
            sql::{MIGRATIONS, SqlIntegrationRepository},
            toolsets::SqlToolsetRepository,
        },
    },
    sealing::KeyRing,
};

/// The name the service reports in telemetry.
pub const SERVICE_NAME: &str = "mcp-service";

const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 50051);

/// Methods that reach an MCP server: each bounds itself by the integration's
/// connect and call limits, so the server's default deadline must not cut it.
const UPSTREAM_METHODS: &[&str] = &[
    "/switchboard.mcp.v1.McpService/ValidateIntegration",
    "/switchboard.mcp.v1.McpService/Discover",
    "/switchboard.mcp.v1.McpService/ExecuteTool",
    "/switchboard.mcp.v1.McpService/RetrieveResource",
    "/switchboard.mcp.v1.McpService/GetPrompt",
    "/switchboard.mcp.v1.PolicyService/ExplainPolicy",
];

struct Built {
    authenticator: Arc<Authenticator>,
    services: Services,
    /// The MCP endpoint, when it is on; it stops when the gRPC server does.
    endpoint: Option<McpEndpoint>,
}

/// An organization's sessions and stdio processes counted across replicas:
/// in grants shared in the database on PostgreSQL, in memory on SQLite (one
/// replica), renewed and given back by a heartbeat like calls in flight,
/// and given up when the server stops gracefully.
fn shared_sessions(config: &Config, db: &Database) -> Arc<SharedSessions> {
    let server = &config.common.server;
    let ttl = server.org_slot_grant_ttl;
    let store = |table: &'static str| -> Arc<dyn SlotGrants> {
        match db.backend {
            Backend::Postgres => Arc::new(PgSlotGrants::in_table(db.pool.clone(), ttl, table)),
            Backend::Sqlite => Arc::new(MemorySlotGrants::new(ttl)),
        }
    };
    let settings = GrantSettings {
        batch: server.org_slot_grant_batch,
        ttl,
        token_batch: server.org_rate_grant_batch,
    };
    let replica = uuid::Uuid::now_v7().to_string();
    let quotas = SessionQuotas {
        table: server.org_limits_or_defaults(),
        sessions: config.max_sessions_per_org,
        stdio_processes: config.max_stdio_sessions_per_org,
    };
    let shared = Arc::new(SharedSessions::new(
        quotas,
        GrantedSlots::new(replica.clone(), store("org_session_grants"), settings),
        GrantedSlots::new(replica, store("org_stdio_grants"), settings),
    ));
    shared.spawn_heartbeat(server.org_slot_grant_heartbeat);
    shared
}

/// The token verifier, once the request deadline is known to leave room
/// for the longest call an integration may make.
fn authenticator(config: &Config) -> anyhow::Result<Arc<Authenticator>> {
    let longest_call = Timeouts::MAX_CONNECT + Timeouts::MAX_CALL;
    anyhow::ensure!(
        config.common.server.max_request_timeout >= longest_call,
        "SWITCHBOARD_MAX_REQUEST_TIMEOUT must be at least {longest_call:?}, the longest an integration's connect and call limits allow"
    );
    Ok(Arc::new(
        Authenticator::new(&config.common.auth.verifier_config()?)
            .context("invalid token verification settings")?,
    ))
}

async fn build(config: &Config) -> anyhow::Result<Built> {
    config.endpoint.validate()?;
    let authenticator = authenticator(config)?;
    let keys = Arc::new(config.key_ring()?);
    let db = config
        .common
        .database
        .open(SERVICE_NAME, MIGRATIONS)
        .await?;
    let policy = Arc::new(config_policy(config)?);
    let (connector, flows) = connector(config, &policy, &db.pool, keys.clone())?;
    let shared = shared_sessions(config, &db);
    let (gateway, relay) = gateway(config, connector, &shared, &policy, &flows)?;
    let resume = ResumeSeal::new(keys.clone(), config.resume_ttl);
    let repository = unpinned::reported_repository(&db.pool, keys).await;
    let integrations = integration_service(config, repository.clone(), gateway.clone(), policy)?;
    let policies = policy_engine(config, &db.pool);
    let calls = CallService::new(
        integrations.clone(),
        gateway,
        Arc::new(flows),
        config.call_timeout,
    )
    .with_bounds(config.call_bounds())
    .with_guardrails(config.guardrails.guardrails()?)
    .with_policies(policies.clone());
    let (audit_api, auditor) = audit(config, &db);
    let toolsets_api = toolsets_api(config, &db.pool, repository.clone(), auditor.clone());
    let (calls, approval_api) = approvals(config, &db.pool, calls, auditor.clone());
    let policy_api = policy_api(config, policies, &integrations, &calls, auditor.clone());
    let audited = AuditedCalls::new(calls, auditor.clone());
    // One set of limits for both listeners: an organization's MCP requests
    // and gRPC calls count against the same budget.
    let limits = CallLimits::for_server(&config.common.server, Some(&db))?;
    let store = Arc::new(SqlToolsetRepository::new(db.pool.clone()));
    let toolsets = (ToolsetResolver::new(store, repository.clone()), relay);
    let endpoint = mcp_endpoint(
        config,
        &authenticator,
        &integrations,
        toolsets,
        &audited,
        (&limits, &db.pool),
    );
    let stop_endpoint = endpoint.as_ref().map(McpEndpoint::stop_token);
    let api = mcp_api(config, &db, integrations, auditor, audited, resume);
    Ok(Built {
        authenticator,
        endpoint,
        services: Services::new()
            .with(api)
            .with(policy_api)
            .with(audit_api)
            .with(approval_api)
            .with(toolsets_api)
            .self_limited(UPSTREAM_METHODS)
            .with_limits(limits)
            .on_stop(async move { shared.release().await })
            .on_stop(async move { stop_endpoint.iter().for_each(CancellationToken::cancel) })
            .watch_database(db),
    })
}

/// `McpService`: integration changes and calls, audited, writes made once
/// per request id.
fn mcp_api(
    config: &Config,
    db: &Database,
    integrations: IntegrationService,
    auditor: Option<Auditor>,
    calls: AuditedCalls,
    resume: ResumeSeal,
) -> McpServiceServer<McpApi> {
    let max = config.common.server.max_message_bytes;
    let idempotency = Idempotency::new(RequestIds::new(
        db.pool.clone(),
        config.common.database.request_id_window,
    ));
    McpServiceServer::new(McpApi::new(
        IntegrationChanges::new(integrations, auditor),
        calls,
        idempotency,
        resume,
    ))
    .max_decoding_message_size(max)
    .max_encoding_message_size(max)
}

/// The MCP endpoint, when `SWITCHBOARD_MCP_ENDPOINT_LISTEN` turns it on:
/// the same token verifier, integrations, audited calls and limits as the
/// gRPC API.
fn mcp_endpoint(
    config: &Config,
    authenticator: &Arc<Authenticator>,
    integrations: &IntegrationService,
    (toolsets, downstream): (ToolsetResolver, Downstream),
    calls: &AuditedCalls,
    (limits, pool): (&CallLimits, &sqlx::AnyPool),
) -> Option<McpEndpoint> {
    config.endpoint.listen?;
    Some(McpEndpoint::new(
        &config.endpoint,
        EndpointParts {
            authenticator: authenticator.clone(),
            integrations: integrations.clone(),
            toolsets,
            calls: calls.clone(),
            issuer: config.common.auth.jwt_issuer.clone(),
            downstream,
            admission: Admission::new(limits.clone()),
            sessions: Arc::new(SqlEndpointSessions::new(pool.clone())),
        },
    ))
}

/// Approval gates on `calls`, and `ApprovalService`, where approvers
/// decide them.
fn approvals(
    config: &Config,
    pool: &sqlx::AnyPool,
    calls: CallService,
    auditor: Option<Auditor>,
) -> (CallService, ApprovalServiceServer<ApprovalApi>) {
    let max = config.common.server.max_message_bytes;
    let approvals = Approvals::new(
        Arc::new(SqlApprovalRepository::new(pool.clone())),
        config.approvals.limits(),
    );
    let api = ApprovalServiceServer::new(ApprovalApi::new(approvals.clone(), auditor))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);
    (calls.with_approvals(approvals), api)
}

/// Where integrations may connect: addresses and stdio commands allowed.
fn config_policy(config: &Config) -> anyhow::Result<ConfigPolicy> {
    Ok(ConfigPolicy {
        addresses: config.address_policy()?,
        stdio: config.stdio_allow_list()?,
        openapi: config.openapi.limits(),
        grpc: config.grpc.limits(),
    })
}

/// The integrations of every organization, in `repository`, connected
/// through `gateway` under `policy`; usable ones cached for the TTL.
fn integration_service(
    config: &Config,
    repository: Arc<SqlIntegrationRepository>,
    gateway: Arc<Gateways>,
    policy: Arc<ConfigPolicy>,
) -> anyhow::Result<IntegrationService> {
    let documents = Arc::new(gateway.document_fetcher(config.openapi.fetch_timeout));
    Ok(
        IntegrationService::new(repository, gateway, policy, Arc::new(config.catalog()?))
            .with_usable_cache(config.integration_cache_ttl)
            .with_documents(documents),
    )
}

/// Each organization's compiled policies, read again after the cache TTL.
fn policy_engine(config: &Config, pool: &sqlx::AnyPool) -> Arc<PolicyEngine> {
    Arc::new(PolicyEngine::new(
        Arc::new(SqlPolicyRepository::new(pool.clone())),
        config.policy.cache_ttl,
    ))
}

/// `PolicyService`: admins write the policies `calls` enforces.
fn policy_api(
    config: &Config,
    policies: Arc<PolicyEngine>,
    integrations: &IntegrationService,
    calls: &CallService,
    auditor: Option<Auditor>,
) -> PolicyServiceServer<PolicyApi> {
    let max = config.common.server.max_message_bytes;
    PolicyServiceServer::new(PolicyApi::new(
        PolicyAdmin::new(policies, config.policy.limits()).with_audit(auditor),
        integrations.clone(),
        calls.clone(),
    ))
    .max_decoding_message_size(max)
    .max_encoding_message_size(max)
}

/// `ToolsetsService`: admins name selections of the organization's
/// integrations, which the MCP endpoint serves; every write audited.
fn toolsets_api(
    config: &Config,
    pool: &sqlx::AnyPool,
    integrations: Arc<SqlIntegrationRepository>,
    auditor: Option<Auditor>,
) -> ToolsetsServiceServer<ToolsetsApi> {
    let max = config.common.server.max_message_bytes;
    let admin = ToolsetAdmin::new(
        Arc::new(SqlToolsetRepository::new(pool.clone())),
        integrations,
        config.toolsets.limits(),
    )
    .with_audit(auditor);
    ToolsetsServiceServer::new(ToolsetsApi::new(admin))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max)
}

/// The audit trail: one writer per replica group-commits the events, the
/// purge removes what retention no longer keeps; no auditor when the trail
/// is off (`AuditService` still reads what was recorded).
fn audit(config: &Config, db: &Database) -> (AuditServiceServer<AuditApi>, Option<Auditor>) {
    let store = Arc::new(SqlAuditLog::new(db.pool.clone()));
    let log: Arc<dyn AuditLog> = Arc::new(BatchingAuditLog::start(
        store,
        config.audit.queue,
        BatchShape {
            max: config.audit.max_batch,
            wait: config.audit.batch_wait,
        },
    ));
    config.audit.retention().spawn(log.clone());
    let auditor = config
        .audit
        .enabled
        .then(|| Auditor::new(log.clone(), config.audit.settings()));
    let max = config.common.server.max_message_bytes;
    let api = AuditServiceServer::new(AuditApi::new(AuditTrail::new(log), max))
        .max_encoding_message_size(max);
    (api, auditor)
}

/// The HTTP client of OAuth metadata discovery, registration and the
/// authorization code flow: every request through the address policy,
/// bodies bounded like token responses.
fn policy_oauth_http(
    config: &Config,
    addresses: &Arc<AddressPolicy>,
    extra_roots: &[reqwest::Certificate],
    http: reqwest::Client,
) -> anyhow::Result<PolicyOAuthHttp> {
    let stop = build_client_without_redirects(
        addresses.clone(),
        &HttpClientOptions {
            connect_timeout: config.connect_timeout,
            max_redirects: 0,
            extra_roots: extra_roots.to_vec(),
            pool_idle_timeout: config.pool_idle_timeout,
        },
    )
    .context("failed to build the outbound HTTP client")?;
    Ok(PolicyOAuthHttp::new(
        http,
        stop,
        addresses.clone(),
        config.oauth_max_token_response_bytes,
    ))
}

/// The per-user OAuth authorization code flows, requesting through
/// `oauth_http`, grants sealed.
fn authorization_flows(
    config: &Config,
    addresses: &Arc<AddressPolicy>,
    oauth_http: PolicyOAuthHttp,
    http: reqwest::Client,
    pool: &sqlx::AnyPool,
    keys: Arc<KeyRing>,
) -> AuthorizationCodeFlows {
    AuthorizationCodeFlows::new(
        oauth_http,
        http,
        addresses.clone(),
        SqlOAuthStore::new(pool.clone(), keys),
    )
    .with_start_interval(config.oauth_start_interval)
}

/// Applies the pending database migrations and returns (the deployment's
/// migration step, `SWITCHBOARD_MIGRATE_ONLY`).
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    config
        .common
        .database
        .migrate(SERVICE_NAME, MIGRATIONS)
        .await
}

/// Starts the MCP endpoint, when it is on, on its own listener.
async fn start_endpoint(config: &Config, built: &mut Built) -> anyhow::Result<()> {
    if let (Some(endpoint), Some(listen)) = (built.endpoint.take(), config.endpoint.listen) {
        endpoint.spawn(listen).await?;
    }
    Ok(())
}

/// Runs mcp-service until `shutdown` resolves, then shuts down gracefully.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let mut built = build(&config).await?;
    start_endpoint(&config, &mut built).await?;
    switchboard_server::bind_and_serve(
        SERVICE_NAME,
        &config.common.server,
        DEFAULT_LISTEN,
        built.authenticator,
        built.services,
        shutdown,
    )
    .await
}

/// Starts mcp-service on a background task (tests and embedders).
pub async fn spawn(config: Config) -> anyhow::Result<RunningServer> {
    let mut built = build(&config).await?;
    start_endpoint(&config, &mut built).await?;
    switchboard_server::spawn(&config.common.server, built.authenticator, built.services).await
}
