//! Wiring: storage, adapters and the gRPC server.

use std::{
    future::Future,
    net::SocketAddr,
    sync::{Arc, Weak},
    time::Duration,
};

use anyhow::Context as _;
use switchboard_auth::Authenticator;
use switchboard_db::{now_millis, request_ids::RequestIds};
use switchboard_proto::runs::v1::runs_service_server::RunsServiceServer;
use switchboard_server::{Idempotency, RunningServer, Services};

use crate::{
    Config,
    domain::{
        datasource::DataSources,
        ports::{McpPort, RunsRepository},
        run::{ActiveRuns, Orchestrator, RunPorts, RunSettings},
        service::RunsService,
        tools::ToolRouter,
    },
    inbound::RunsApi,
    outbound::{
        datasource::SqlDataSources,
        llm::{ModelRegistry, parse_providers},
        mcp::{GrpcMcp, McpEndpoints},
        sql::{MIGRATIONS, SqlRunsRepository},
    },
};

/// The name the service reports in telemetry.
pub const SERVICE_NAME: &str = "runs-service";

const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 50052);

struct Built {
    authenticator: Arc<Authenticator>,
    services: Services,
}

/// mcp-service's replicas, balanced.
async fn mcp_service(config: &Config) -> anyhow::Result<Arc<dyn McpPort>> {
    let endpoints = McpEndpoints::parse(
        &config.mcp_service_url,
        config.mcp_service_resolve_interval,
        config.mcp_service_keepalive,
    )
    .context("invalid SWITCHBOARD_MCP_SERVICE_URL")?;
    Ok(Arc::new(GrpcMcp::new(&endpoints).await))
}

async fn build(config: &Config) -> anyhow::Result<Built> {
    let authenticator = Arc::new(
        Authenticator::new(&config.common.auth.verifier_config()?)
            .context("invalid token verification settings")?,
    );
    let db = config
        .common
        .database
        .open(SERVICE_NAME, MIGRATIONS)
        .await?;
    let repo: Arc<dyn RunsRepository> = Arc::new(SqlRunsRepository::new(db.pool.clone()));
    let active = take_over_runs(&repo, config.run_stale_after).await?;
    let (models, known) = model_providers(config)?;
    let mcp = mcp_service(config).await?;
    let settings = &config.data_sources;
    settings.check(config.common.server.max_message_bytes)?;
    let sources: Arc<dyn DataSources> = Arc::new(
        SqlDataSources::new(
            db.pool.clone(),
            settings.import_limits(),
            settings.query_limits(),
        )
        .with_capacity(settings.capacity()),
    );
    let limits = &config.model_limits;
    let orchestrator = Orchestrator::new(
        RunPorts {
            repo: repo.clone(),
            mcp: mcp.clone(),
            models,
            tools: Arc::new(ToolRouter::new(mcp, sources.clone(), config.tool_timeout)),
        },
        RunSettings {
            default_max_steps: config.default_max_steps,
            discovery_timeout: config.discovery_timeout,
            max_parallel_tools: config.max_parallel_tools,
            max_output_tokens: limits.model_max_output_tokens,
            history: limits.history_limits(),
            input: limits.input_limits(),
        },
        active,
    );
    let service = RunsService::new(repo, known, sources);
    let max = config.common.server.max_message_bytes;
    let idempotency = Idempotency::new(RequestIds::new(
        db.pool.clone(),
        config.common.database.request_id_window,
    ));
    let api = RunsServiceServer::new(RunsApi::new(service, orchestrator, idempotency))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);
    Ok(Built {
        authenticator,
        services: Services::new().with(api).watch_database(db),
    })
}

/// Marks the runs of a stopped process as interrupted and starts the
/// heartbeats of this one's.
async fn take_over_runs(
    repo: &Arc<dyn RunsRepository>,
    stale_after: Duration,
) -> anyhow::Result<ActiveRuns> {
    let interrupted = repo
        .interrupt_stale_runs(stale_before(stale_after), now_millis())
        .await?;
    if interrupted > 0 {
        tracing::warn!(
            runs = interrupted,
            "marked runs of a stopped process as interrupted"
        );
    }
    let active = ActiveRuns::default();
    keep_runs_alive(Arc::downgrade(repo), active.clone(), stale_after);
    Ok(active)
}

/// The configured model providers, and their names.
fn model_providers(config: &Config) -> anyhow::Result<(Arc<ModelRegistry>, Vec<String>)> {
    // TLS to model providers uses ring; the provider is process-wide.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .context("failed to build the model HTTP client")?;
    let mut providers = parse_providers(&config.model_providers)?;
    for provider in &mut providers {
        provider.limits = config.model_limits.stream_limits();
    }
    let known: Vec<String> = providers.iter().map(|p| p.name.clone()).collect();
    Ok((
        Arc::new(ModelRegistry::from_configs(&providers, &http)),
        known,
    ))
}

fn stale_before(stale_after: Duration) -> i64 {
    now_millis() - i64::try_from(stale_after.as_millis()).unwrap_or(i64::MAX)
}

/// Renews the heartbeat of this process's runs, and marks runs whose process
/// stopped renewing as interrupted, until the service is dropped.
fn keep_runs_alive(repo: Weak<dyn RunsRepository>, active: ActiveRuns, stale_after: Duration) {
    let period = (stale_after / 4).max(Duration::from_millis(100));
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        loop {
            ticker.tick().await;
            let Some(repo) = repo.upgrade() else { break };
            let now = now_millis();
            if let Err(error) = repo.heartbeat(&active.ids(), now).await {
                tracing::warn!(error = %error, "failed to renew run heartbeats");
            }
            match repo
                .interrupt_stale_runs(stale_before(stale_after), now)
                .await
            {
                Ok(0) => {}
                Ok(runs) => tracing::warn!(runs, "marked runs of a stopped process as interrupted"),
                Err(error) => tracing::warn!(error = %error, "failed to check for stale runs"),
            }
        }
    });
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

/// Runs runs-service until `shutdown` resolves, then shuts down gracefully.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let built = build(&config).await?;
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

/// Starts runs-service on a background task (tests and embedders).
pub async fn spawn(config: Config) -> anyhow::Result<RunningServer> {
    let built = build(&config).await?;
    switchboard_server::spawn(&config.common.server, built.authenticator, built.services).await
}
