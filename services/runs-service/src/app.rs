//! Wiring: storage, adapters and the gRPC server.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context as _;
use switchboard_auth::Authenticator;
use switchboard_db::request_ids::RequestIds;
use switchboard_proto::runs::v1::runs_service_server::RunsServiceServer;
use switchboard_server::{Idempotency, RunningServer, Services};

use crate::{
    Config,
    domain::{
        datasource::DataSources,
        ports::{Keeping, McpPort, RunsRepository},
        run::{
            ActiveRuns, LeaseSettings, Orchestrator, RunPorts, RunSettings, WatchSettings,
            keep_leases,
        },
        service::RunsService,
        tools::ToolRouter,
    },
    inbound::RunsApi,
    outbound::{
        datasource::{SqlDataSources, TableObjects},
        llm::{ModelRegistry, parse_providers},
        mcp::{GrpcMcp, McpEndpoints},
        sql::{MIGRATIONS, Replica, SqlRunsRepository},
    },
};

/// The name the service reports in telemetry.
pub const SERVICE_NAME: &str = "runs-service";

/// How long `WatchRun` waits for the last event of a run that ended before
/// it makes one from the run's state.
const WATCH_END_GRACE: Duration = Duration::from_secs(5);

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
        config.mcp_service_tls.tls()?,
        config.mcp_service_resolve_interval,
        config.common.server.http2_keepalive_interval,
        config.common.server.http2_keepalive_timeout,
    )
    .context("invalid SWITCHBOARD_MCP_SERVICE_URL")?;
    Ok(Arc::new(
        GrpcMcp::new(&endpoints)
            .await
            .with_max_message_bytes(config.common.server.max_message_bytes),
    ))
}

/// What storage adapter the service runs on: the SQL repository, or that
/// repository inside a wrapper (tests that count what is read).
type WrapRepository = Box<dyn FnOnce(Arc<dyn RunsRepository>) -> Arc<dyn RunsRepository> + Send>;

async fn build(config: &Config, wrap: WrapRepository) -> anyhow::Result<Built> {
    let authenticator = Arc::new(
        Authenticator::new(&config.common.auth.verifier_config()?)
            .context("invalid token verification settings")?,
    );
    let db = config
        .common
        .database
        .open(SERVICE_NAME, MIGRATIONS)
        .await?;
    let sql = repository(config, &db)?;
    let keeping = keeping(config, &authenticator, &sql)?;
    let repo = wrap(sql);
    let active = interrupt_stopped_runs(&repo).await?;
    let (models, known) = model_providers(config)?;
    crate::metrics::name_only(&known, config.metrics_models.split(','));
    let mcp = mcp_service(config).await?;
    let settings = &config.data_sources;
    let sources: Arc<dyn DataSources> = data_sources(config, &db)?;
    let orchestrator = Orchestrator::new(
        RunPorts {
            repo: repo.clone(),
            mcp: mcp.clone(),
            models,
            tools: Arc::new(
                ToolRouter::new(mcp, sources.clone(), config.tool_timeout)
                    .with_table_bytes(settings.tool_result_table_bytes),
            ),
            keeping,
        },
        run_settings(config)?,
        active.clone(),
    );
    start_leases(config, &repo, active, &orchestrator);
    let service = RunsService::new(repo, known, sources);
    let max = config.common.server.max_message_bytes;
    let idempotency = Idempotency::new(RequestIds::new(
        db.pool.clone(),
        config.common.database.request_id_window,
    ));
    let api = RunsServiceServer::new(RunsApi::new(
        service,
        orchestrator,
        idempotency,
        config.replicas.run_stream_heartbeat,
    ))
    .max_decoding_message_size(max)
    .max_encoding_message_size(max);
    Ok(Built {
        authenticator,
        services: Services::new().with(api).watch_database(db),
    })
}

/// Starts the heartbeats of this process's runs, and the takeover of
/// stopped runs that continue.
fn start_leases(
    config: &Config,
    repo: &Arc<dyn RunsRepository>,
    active: ActiveRuns,
    orchestrator: &Orchestrator,
) {
    keep_leases(
        Arc::downgrade(repo),
        active,
        LeaseSettings {
            lease: config.run_stale_after,
            heartbeat_every: config.replicas.run_heartbeat_interval,
        },
        orchestrator.takeover(),
    );
}

/// Where the callers of runs that continue on another replica are kept,
/// when caller keys are set.
fn keeping(
    config: &Config,
    authenticator: &Arc<Authenticator>,
    sql: &Arc<SqlRunsRepository>,
) -> anyhow::Result<Option<Keeping>> {
    let Some(callers) = config.takeovers.callers(authenticator)? else {
        return Ok(None);
    };
    tracing::info!("runs of agents that continue are taken over when their replica stops");
    Ok(Some(Keeping {
        store: sql.clone(),
        keeper: Arc::new(callers),
    }))
}

/// The data sources in `db` (and the object store, if one is set), with
/// the store's sweep started.
fn data_sources(
    config: &Config,
    db: &switchboard_db::Database,
) -> anyhow::Result<Arc<SqlDataSources>> {
    let settings = &config.data_sources;
    settings.check(config.common.server.max_message_bytes)?;
    let mut sources = SqlDataSources::new(
        db.pool.clone(),
        settings.import_limits(),
        settings.query_limits(),
    )
    .with_capacity(settings.capacity())
    .with_org_bytes(own_data_source_bytes(config));
    if let Some(worker) = &settings.query_worker {
        sources = sources.with_query_worker(worker.clone());
    }
    if let Some(store) = settings.store.settings()? {
        tracing::info!(url = %store.url, "data source tables kept in an object store");
        sources = sources.with_objects(TableObjects::new(&store)?);
    }
    let sources = Arc::new(sources);
    if sources.objects().is_some() {
        spawn_object_sweep(&sources, settings.store.sweep_interval);
    }
    Ok(sources)
}

/// Sweeps, every `interval` while the service runs, the objects that a
/// failed thread deletion left.
fn spawn_object_sweep(sources: &Arc<SqlDataSources>, interval: Duration) {
    let sources = Arc::downgrade(sources);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        loop {
            ticks.tick().await;
            let Some(sources) = sources.upgrade() else {
                return;
            };
            match sources.sweep_objects().await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(objects = deleted, "swept deleted threads' objects"),
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), "data source object sweep failed");
                }
            }
        }
    });
}

/// Storage, writing runs for this replica process.
fn repository(
    config: &Config,
    db: &switchboard_db::Database,
) -> anyhow::Result<Arc<SqlRunsRepository>> {
    config.replicas.check(config.run_stale_after)?;
    let replica = Replica::new(config.replicas.name(), config.run_stale_after)
        .with_max_takeovers(config.takeovers.run_max_takeovers);
    tracing::info!(replica = %replica.id, name = ?replica.name, "runs-service replica");
    Ok(Arc::new(
        SqlRunsRepository::new(db.pool.clone()).with_replica(replica),
    ))
}

/// The limits of runs, from the settings.
/// The organizations with a limit of data-source bytes of their own in the
/// organization limits file.
fn own_data_source_bytes(config: &Config) -> Vec<(String, u64)> {
    let limits = config.common.server.org_limits_or_defaults();
    limits
        .overrides()
        .filter_map(|(org, own)| own.data_source_bytes.map(|bytes| (org.to_owned(), bytes)))
        .collect()
}

fn run_settings(config: &Config) -> anyhow::Result<RunSettings> {
    let model = &config.model_limits;
    let limits = config.run_limits.run_limits()?;
    Ok(RunSettings {
        default_max_steps: config.default_max_steps,
        discovery_timeout: config.discovery_timeout,
        max_parallel_tools: config.max_parallel_tools,
        max_output_tokens: model.model_max_output_tokens,
        history: model.history_limits(),
        input: model.input_limits(),
        max_stored_events: config.replicas.run_events_max,
        event_queue: config.replicas.run_events_queue,
        watch: WatchSettings {
            poll_every: config.replicas.run_watch_poll_interval,
            end_grace: WATCH_END_GRACE,
        },
        limits,
        budgets: config.budgets.budgets()?,
    })
}

/// Marks the runs of this replica's previous process, and runs whose lease
/// expired, as interrupted, except those that continue (taken over by the
/// lease loop); the runs this process will execute.
async fn interrupt_stopped_runs(repo: &Arc<dyn RunsRepository>) -> anyhow::Result<ActiveRuns> {
    let restarted = repo.interrupt_previous_process_runs().await?;
    let expired = repo.interrupt_expired_runs().await?;
    if restarted + expired > 0 {
        tracing::warn!(
            restarted,
            expired,
            "marked runs of stopped processes as interrupted"
        );
    }
    Ok(ActiveRuns::default())
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
    let built = build(&config, Box::new(|repo| repo)).await?;
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
    spawn_wrapped(config, |repo| repo).await
}

/// [`spawn`] with its repository in `wrap`: tests observe what the service
/// asks of the real SQL repository.
pub async fn spawn_wrapped(
    config: Config,
    wrap: impl FnOnce(Arc<dyn RunsRepository>) -> Arc<dyn RunsRepository> + Send + 'static,
) -> anyhow::Result<RunningServer> {
    let built = build(&config, Box::new(wrap)).await?;
    switchboard_server::spawn(&config.common.server, built.authenticator, built.services).await
}
