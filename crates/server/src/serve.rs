//! Building and running the gRPC server.

use std::{
    collections::HashSet, convert::Infallible, future::Future, net::SocketAddr, pin::Pin,
    sync::Arc, time::Duration,
};

use anyhow::Context as _;
use futures::future::{BoxFuture, Either, join_all};
use switchboard_auth::Authenticator;

use crate::AuthLayer;
use switchboard_db::Database;
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tonic::{
    body::Body, server::NamedService, service::RoutesBuilder, transport::server::TcpIncoming,
};
use tonic_health::{ServingStatus, server::HealthReporter};
use tower::{Service, ServiceBuilder};
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::{Level, Span};

use crate::{
    CallLimits, DeadlineLayer, Deadlines, ServerArgs,
    connections::{self, FdBudget, serve_connections},
    readiness::{self, Watch},
    reflection::{reflection_v1, reflection_v1alpha},
    rpc_methods::RpcMethods,
    rpc_telemetry::{RpcTelemetryLayer, is_untraced},
    tls::{ReloadingTls, tls_incoming},
};

/// How often the rate limiter forgets organizations whose buckets are full.
const FORGET_IDLE_ORGS_EVERY: Duration = Duration::from_secs(60);
/// How long a stopping server tries to give up its grants (calls in
/// flight, and those of [`Services::on_stop`]); past it they expire on
/// their own, so a database that does not answer cannot hold the stop.
const RELEASE_GRANTS_WITHIN: Duration = Duration::from_secs(2);

/// The API services a process serves, next to health and reflection.
#[derive(Debug, Default)]
pub struct Services {
    routes: RoutesBuilder,
    names: Vec<&'static str>,
    self_limited: HashSet<String>,
    database: Option<Database>,
    limits: Option<CallLimits>,
    on_stop: OnStop,
}

/// What a stopping server gives back once its calls have drained.
#[derive(Default)]
struct OnStop(Vec<BoxFuture<'static, ()>>);

impl std::fmt::Debug for OnStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OnStop({} tasks)", self.0.len())
    }
}

impl Services {
    /// No services yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a generated tonic server; it is reported SERVING while the process runs.
    pub fn with<S>(mut self, service: S) -> Self
    where
        S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes.add_service(service);
        self.names.push(S::NAME);
        self
    }

    /// Declares methods (`/package.Service/Method`) that bound their own
    /// work: without a `grpc-timeout` they get `max-request-timeout` rather
    /// than `request-timeout`.
    pub fn self_limited(mut self, paths: &[&str]) -> Self {
        self.self_limited
            .extend(paths.iter().map(|p| (*p).to_owned()));
        self
    }

    /// Reports the services NOT_SERVING while `database` does not answer.
    pub fn watch_database(mut self, database: Database) -> Self {
        self.database = Some(database);
        self
    }

    /// Enforces `limits` rather than limits of the server's own: a process
    /// with another listener (the MCP endpoint) admits that listener's
    /// requests against the same `limits`, so that an organization has one
    /// budget whichever way it calls.
    pub fn with_limits(mut self, limits: CallLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Runs `release` when the server stops gracefully, after its calls
    /// drained and beside giving up its grants of calls in flight, within
    /// the same bound: what the services hold in the database for this
    /// replica (grants of upstream sessions) goes to the other replicas at
    /// once rather than when it expires.
    pub fn on_stop(mut self, release: impl Future<Output = ()> + Send + 'static) -> Self {
        self.on_stop.0.push(Box::pin(release));
        self
    }
}

/// A server running on a background task, as tests and embedders use it.
#[derive(Debug)]
pub struct RunningServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Whether it serves TLS.
    pub tls: bool,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// The URL of the server: `https://` when it serves TLS, else `http://`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Shuts the server down gracefully and waits for it to stop.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        (&mut self.task).await.context("server task panicked")?
    }
}

/// Binds `args.listen` and serves `services` on a background task until
/// [`RunningServer::stop`].
pub async fn spawn(
    args: &ServerArgs,
    authenticator: Arc<Authenticator>,
    services: Services,
) -> anyhow::Result<RunningServer> {
    let listen = args
        .listen
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("failed to listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let tls = args.tls.tls_cert_file.is_some();
    let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
    let args = args.clone();
    let task = tokio::spawn(async move {
        serve(&args, authenticator, listener, services, async {
            let _ = shutdown_rx.await;
        })
        .await
    });
    Ok(RunningServer {
        addr,
        tls,
        shutdown: Some(shutdown_tx),
        task,
    })
}

/// Serves `services` with health and reflection on `listener` until `shutdown`
/// completes, then shuts down gracefully:
/// 1. health reports NOT_SERVING for every service;
/// 2. after `shutdown_delay` the listener closes;
/// 3. in-flight calls get `drain_timeout` to finish, then are dropped.
pub async fn serve(
    args: &ServerArgs,
    authenticator: Arc<Authenticator>,
    listener: TcpListener,
    services: Services,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    args.validate()?;
    let Services {
        mut routes,
        names,
        self_limited,
        database,
        limits,
        on_stop,
    } = services;
    let health = report_serving(&mut routes, &names).await?;
    let tls = args.tls.files()?.map(ReloadingTls::load).transpose()?;

    let limits = match limits {
        Some(limits) => limits,
        None => CallLimits::for_server(args, database.as_ref())?,
    };
    let org_limits = limits.org.clone();
    let background = AbortOnDrop(vec![
        Some(org_limits.spawn_forgetting(FORGET_IDLE_ORGS_EVERY)),
        Some(org_limits.spawn_heartbeat(args.org_slot_grant_heartbeat)),
        tls.as_ref()
            .map(|tls| tls.spawn_watch(args.tls.tls_reload_interval)),
        database.map(|database| {
            let watch = Watch {
                database,
                interval: args.readiness_interval,
                timeout: args.readiness_timeout,
            };
            readiness::spawn(health.clone(), names.clone(), watch)
        }),
    ]);

    let middleware = Middleware {
        // Span names and metric labels come from the methods served, never
        // from the path a caller sent.
        methods: RpcMethods::of(&names)?,
        authenticator,
        limits,
        self_limited,
    };
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let server = grpc_server(args, middleware, routes, (listener, tls), stop_rx);
    tokio::pin!(server);

    tokio::select! {
        () = &mut server => anyhow::bail!("gRPC server stopped unasked"),
        () = shutdown => {}
    }

    // The database watch must not report SERVING again from here on.
    drop(background);
    let drained = drain(args, &health, &names, stop_tx, server).await;
    // The other replicas get this one's slots now rather than after the
    // grants' time-to-live.
    let release = futures::future::join(org_limits.release(), join_all(on_stop.0));
    if tokio::time::timeout(RELEASE_GRANTS_WITHIN, release)
        .await
        .is_err()
    {
        tracing::warn!(
            within = ?RELEASE_GRANTS_WITHIN,
            "grants not given up in time; they expire on their own"
        );
    }
    drained
}

/// Reports liveness and every service SERVING, and adds health and
/// reflection to `routes`.
async fn report_serving(
    routes: &mut RoutesBuilder,
    names: &[&'static str],
) -> anyhow::Result<HealthReporter> {
    let (health, health_service) = tonic_health::server::health_reporter();
    // Liveness answers SERVING for as long as the process serves at all,
    // whatever the database or a drain says: a replica whose database is
    // away must leave the load balancer (readiness), not be restarted.
    health
        .set_service_status(crate::LIVENESS_SERVICE, ServingStatus::Serving)
        .await;
    for name in names {
        health
            .set_service_status(*name, ServingStatus::Serving)
            .await;
    }
    routes
        .add_service(health_service)
        .add_service(reflection_v1()?)
        .add_service(reflection_v1alpha()?);
    Ok(health)
}

/// What the middleware stack holds besides the server's settings.
struct Middleware {
    methods: RpcMethods,
    authenticator: Arc<Authenticator>,
    limits: CallLimits,
    self_limited: HashSet<String>,
}

/// The gRPC server: `routes` behind the middleware stack, on `listener`
/// (over TLS when configured), until `stop` fires.
fn grpc_server(
    args: &ServerArgs,
    middleware: Middleware,
    routes: RoutesBuilder,
    (listener, tls): (TcpListener, Option<Arc<ReloadingTls>>),
    stop: oneshot::Receiver<()>,
) -> impl Future<Output = ()> {
    let Middleware {
        methods,
        authenticator,
        limits,
        self_limited,
    } = middleware;
    let stack = ServiceBuilder::new()
        // Trace first, so every call (refused ones too) gets a span that
        // continues the caller's W3C trace.
        .layer(
            TraceLayer::new_for_grpc()
                .make_span_with(request_span(methods.clone()))
                .on_failure(DefaultOnFailure::new().level(Level::INFO)),
        )
        // Inside the span: the call's gRPC status on its span and in the
        // RPC duration histogram, refusals by the layers below included.
        .layer(RpcTelemetryLayer::new(methods))
        // A call whose very token was refused at its organization's rate
        // is refused again until that organization's next token, before
        // its signature is checked: a caller flooding past its rate costs
        // the cores others need less. Never admits, spends nothing, and a
        // token never verified never matches.
        .layer(limits.org.early_refusals())
        // Authenticate first: every layer below finds a verified principal.
        // Verification is a signature check (keys fetched at a bounded
        // rate), cheap beside the calls it admits.
        .layer(AuthLayer::new(authenticator))
        // Then the limits of the caller's organization, so that one
        // organization's hanging calls or bursts take its own slots and
        // tokens, not every organization's. A call at its organization's
        // limit waits in that organization's line, outside the global
        // limit: a waiting call costs a parked task, and one organization's
        // line must not take the process's slots from the others. Health
        // and reflection carry no organization and pass.
        .layer(limits.org)
        // Bound the calls in flight across all connections (a stream until
        // it ends), and with them memory and the fan-out to upstream MCP
        // servers and models; over the limit UNAVAILABLE at once, which gRPC
        // clients retry with backoff, since queueing behind slow calls only
        // turns overload into timeouts.
        .layer(limits.global)
        // Deadlines: the caller's `grpc-timeout` up to a ceiling, so that a
        // tool call with a long limit of its own is not cut short.
        .layer(DeadlineLayer::new(Deadlines {
            default: args.request_timeout,
            ceiling: args.max_request_timeout,
            self_limited,
        }))
        .into_inner();

    // Request bodies as tonic reads them, then the stack, then the routes.
    let service = ServiceBuilder::new()
        .map_request(|request: http::Request<hyper::body::Incoming>| request.map(Body::new))
        .layer(stack)
        .service(routes.routes().prepare());
    let budget = FdBudget::of_process();
    let keepalive = (args.http2_keepalive_interval, args.http2_keepalive_timeout);
    let limits = args.connections.limits(&budget, keepalive);
    connections::log_limits("grpc", &limits, &budget);
    let stop = async {
        let _ = stop.await;
    };
    match tls {
        None => {
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            Either::Left(serve_connections(incoming, service, limits, stop))
        }
        Some(tls) => {
            let incoming = tls_incoming(
                listener,
                tls,
                args.tls.tls_handshake_timeout,
                args.tls.tls_max_handshakes,
            );
            Either::Right(serve_connections(incoming, service, limits, stop))
        }
    }
}

/// The graceful end: NOT_SERVING, then after `shutdown_delay` the listener
/// closes, then in-flight calls get `drain_timeout`.
async fn drain(
    args: &ServerArgs,
    health: &HealthReporter,
    names: &[&'static str],
    stop_listening: oneshot::Sender<()>,
    mut server: Pin<&mut impl Future<Output = ()>>,
) -> anyhow::Result<()> {
    tracing::info!("shutting down: reporting NOT_SERVING");
    for name in names.iter().copied().chain([""]) {
        health
            .set_service_status(name, ServingStatus::NotServing)
            .await;
    }
    tokio::time::sleep(args.shutdown_delay).await;
    let _ = stop_listening.send(());
    match tokio::time::timeout(args.drain_timeout, &mut server).await {
        Ok(()) => {}
        Err(_) => tracing::warn!(
            drain_timeout = ?args.drain_timeout,
            "drain deadline passed; closing the remaining calls"
        ),
    }
    tracing::info!("stopped");
    Ok(())
}

/// Aborts background tasks when the server stops, however it stops.
struct AbortOnDrop(Vec<Option<JoinHandle<()>>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in self.0.iter().flatten() {
            task.abort();
        }
    }
}

/// The span of one call, named and attributed per the OpenTelemetry RPC
/// conventions (a path no service serves is `_other`), parented to the
/// caller's trace context.
fn request_span<B>(methods: RpcMethods) -> impl Fn(&http::Request<B>) -> Span + Clone {
    move |request| {
        let path = request.uri().path();
        if is_untraced(path) {
            return Span::none();
        }
        let method = methods.get(path);
        let span = tracing::info_span!(
            "grpc.server",
            otel.name = %method.name,
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = %method.service,
            rpc.method = %method.method,
            rpc.grpc.status_code = tracing::field::Empty,
            enduser.id = tracing::field::Empty,
        );
        switchboard_telemetry::continue_trace(&span, request.headers());
        span
    }
}

/// Binds `args.listen` (or `default_listen`) and serves until `shutdown`, as
/// [`serve`] does; what a service's `run` calls.
pub async fn bind_and_serve(
    name: &str,
    args: &ServerArgs,
    default_listen: SocketAddr,
    authenticator: Arc<Authenticator>,
    services: Services,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let listen = args.listen.unwrap_or(default_listen);
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("failed to listen on {listen}"))?;
    tracing::info!(
        service = name,
        addr = %listener.local_addr()?,
        tls = args.tls.tls_cert_file.is_some(),
        mutual_tls = args.tls.tls_client_ca_file.is_some(),
        "listening"
    );
    serve(args, authenticator, listener, services, shutdown).await
}
