//! The meter: OTLP export when a collector is configured, and the Prometheus
//! scrape endpoint on its own address. Every instrument keeps a bounded
//! number of series, and a scrape answers at most a bounded number of bytes.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use anyhow::Context as _;
use axum::{Router, http::header, response::IntoResponse, routing::get};
use opentelemetry_otlp::{MetricExporter, WithExportConfig};
use opentelemetry_sdk::{
    Resource,
    metrics::{Aggregation, Instrument, InstrumentKind, SdkMeterProvider, Stream},
};
use prometheus::{Encoder as _, Registry, TextEncoder, proto::MetricFamily};
use tokio::{sync::Mutex, task::JoinHandle};

/// Bucket bounds, in seconds, of duration histograms: from a cached lookup
/// to a long tool call.
pub const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Bucket bounds of token-count histograms: powers of four up to a million.
pub const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
];

/// The label value of anything not in a label's allowed set: a tool no
/// server listed, a method no service serves, a model the operator did not
/// name.
pub const OTHER: &str = "_other";

/// Bounds on what the metrics hold and serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsLimits {
    /// Series (distinct label sets) one instrument keeps; measurements of
    /// further label sets are added to the instrument's one overflow series
    /// (`otel_metric_overflow="true"`).
    pub max_series: usize,
    /// Largest scrape answer, in bytes: metric families past it are left
    /// out of the answer (and a warning says so).
    pub max_scrape_bytes: usize,
}

impl Default for MetricsLimits {
    fn default() -> Self {
        Self {
            max_series: 500,
            max_scrape_bytes: 8 * 1024 * 1024,
        }
    }
}

static MAX_SERIES: AtomicUsize = AtomicUsize::new(500);

/// The series one instrument keeps (`SWITCHBOARD_METRICS_MAX_SERIES`): sets
/// of allowed label values (tools a server listed) need hold no more.
pub fn max_series() -> usize {
    MAX_SERIES.load(Ordering::Relaxed)
}

/// Every instrument's stream: at most `max_series` series, and the bucket
/// bounds of its unit (a view replaces the bounds an instrument was made
/// with, so they are chosen here, by unit).
fn bounded(max_series: usize) -> impl Fn(&Instrument) -> Option<Stream> + Send + Sync + 'static {
    move |instrument: &Instrument| {
        let mut stream = Stream::builder().with_cardinality_limit(max_series);
        if instrument.kind() == InstrumentKind::Histogram
            && let Some(boundaries) = buckets_of(instrument.unit())
        {
            stream = stream.with_aggregation(Aggregation::ExplicitBucketHistogram {
                boundaries: boundaries.to_vec(),
                record_min_max: true,
            });
        }
        stream.build().ok()
    }
}

fn buckets_of(unit: &str) -> Option<&'static [f64]> {
    match unit {
        "s" => Some(DURATION_BUCKETS),
        "{token}" => Some(TOKEN_BUCKETS),
        _ => None,
    }
}

/// A meter provider exporting to `endpoint` (every `OTEL_METRIC_EXPORT_INTERVAL`)
/// when set, and readable by Prometheus when `prometheus` is on.
pub(crate) fn meter_provider(
    resource: Resource,
    endpoint: Option<&str>,
    prometheus: bool,
    limits: MetricsLimits,
) -> anyhow::Result<(SdkMeterProvider, Option<Registry>)> {
    anyhow::ensure!(
        limits.max_series > 0,
        "SWITCHBOARD_METRICS_MAX_SERIES must be at least 1"
    );
    MAX_SERIES.store(limits.max_series, Ordering::Relaxed);
    let mut builder = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_view(bounded(limits.max_series));
    if let Some(endpoint) = endpoint {
        let exporter = MetricExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .context("failed to build the OTLP metric exporter")?;
        builder = builder.with_periodic_exporter(exporter);
    }
    let registry = if prometheus {
        let registry = Registry::new();
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .without_scope_info()
            .build()
            .context("failed to build the Prometheus exporter")?;
        builder = builder.with_reader(reader);
        Some(registry)
    } else {
        None
    };
    Ok((builder.build(), registry))
}

/// The Prometheus scrape endpoint (`GET /metrics`), served on a task of its
/// own until dropped.
#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

/// What a scrape reads, and the bound on what it answers.
struct Scrapes {
    registry: Registry,
    max_bytes: usize,
    /// Scrapes run one at a time, so that many scrapers at once cost the
    /// memory of one.
    one_at_a_time: Mutex<()>,
}

impl MetricsEndpoint {
    /// Binds `addr` now (so a taken port fails at start) and serves
    /// `registry` on the current tokio runtime, answering at most
    /// `max_bytes` per scrape.
    pub(crate) fn spawn(
        addr: SocketAddr,
        registry: Registry,
        max_bytes: usize,
    ) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Handle::try_current()
            .context("the metrics endpoint needs a tokio runtime")?;
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("failed to listen for metrics on {addr}"))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let scrapes = Arc::new(Scrapes {
            registry,
            max_bytes,
            one_at_a_time: Mutex::new(()),
        });
        let app = Router::new().route("/metrics", get(move || scrape(scrapes.clone())));
        let task = runtime.spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(error = %error, "the metrics endpoint failed");
            }
        });
        tracing::info!(%addr, "serving metrics");
        Ok(Self { addr, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn scrape(scrapes: Arc<Scrapes>) -> impl IntoResponse {
    let _turn = scrapes.one_at_a_time.lock().await;
    let (body, left_out) = encode_within(&scrapes.registry.gather(), scrapes.max_bytes);
    if left_out > 0 {
        tracing::warn!(
            left_out,
            max_scrape_bytes = scrapes.max_bytes,
            "metric families left out of a scrape at its size limit"
        );
    }
    (
        [(
            header::CONTENT_TYPE,
            TextEncoder::new().format_type().to_owned(),
        )],
        body,
    )
}

/// The text exposition of `families`, whole families only, at most
/// `max_bytes`; and how many families did not fit.
fn encode_within(families: &[MetricFamily], max_bytes: usize) -> (Vec<u8>, usize) {
    let encoder = TextEncoder::new();
    let mut body = Vec::new();
    let mut family_text = Vec::new();
    let mut left_out = 0;
    for family in families {
        family_text.clear();
        let encoded = encoder.encode(std::slice::from_ref(family), &mut family_text);
        if encoded.is_err() || body.len() + family_text.len() > max_bytes {
            left_out += 1;
            continue;
        }
        body.extend_from_slice(&family_text);
    }
    (body, left_out)
}

#[cfg(test)]
mod tests {
    use opentelemetry::{KeyValue, metrics::MeterProvider as _};

    use super::*;

    fn provider_with(max_series: usize) -> (SdkMeterProvider, Registry) {
        let limits = MetricsLimits {
            max_series,
            ..MetricsLimits::default()
        };
        let (provider, registry) =
            meter_provider(Resource::builder().build(), None, true, limits).expect("built");
        (provider, registry.expect("a registry"))
    }

    #[test]
    fn an_instrument_keeps_at_most_its_series_and_the_rest_overflow() {
        let (provider, registry) = provider_with(10);
        let counter = provider.meter("test").u64_counter("calls").build();
        for i in 0..1000 {
            counter.add(1, &[KeyValue::new("key", format!("value-{i}"))]);
        }
        let (body, left_out) = encode_within(&registry.gather(), usize::MAX);
        let text = String::from_utf8(body).expect("utf-8");
        assert_eq!(left_out, 0);
        let series = text
            .lines()
            .filter(|l| l.starts_with("calls_total"))
            .count();
        // Ten label sets, and the overflow series.
        assert_eq!(series, 11, "{text}");
        assert!(text.contains("otel_metric_overflow=\"true\""), "{text}");
        assert!(!text.contains("value-999"), "{text}");
    }

    #[test]
    fn histograms_keep_the_buckets_of_their_unit_under_the_view() {
        let (provider, registry) = provider_with(10);
        let meter = provider.meter("test");
        meter
            .f64_histogram("took")
            .with_unit("s")
            .build()
            .record(0.2, &[]);
        meter
            .u64_histogram("used")
            .with_unit("{token}")
            .build()
            .record(3, &[]);
        let (body, _) = encode_within(&registry.gather(), usize::MAX);
        let text = String::from_utf8(body).expect("utf-8");
        assert!(text.contains("took_seconds_bucket{le=\"300\"}"), "{text}");
        assert!(text.contains("used_bucket{le=\"1048576\"}"), "{text}");
    }

    #[test]
    fn a_scrape_answers_whole_families_up_to_its_limit() {
        let (provider, registry) = provider_with(100);
        let meter = provider.meter("test");
        for name in ["first", "second", "third"] {
            meter.u64_counter(name).build().add(1, &[]);
        }
        let families = registry.gather();
        let (whole, _) = encode_within(&families, usize::MAX);
        let types = |body: &[u8]| String::from_utf8_lossy(body).matches("# TYPE").count();
        let (cut, left_out) = encode_within(&families, whole.len() - 1);
        assert!(cut.len() < whole.len());
        assert_eq!(left_out, 1);
        assert_eq!(types(&cut), types(&whole) - 1);
        let (none, left_out) = encode_within(&families, 0);
        assert!(none.is_empty());
        assert_eq!(left_out, families.len());
    }
}
