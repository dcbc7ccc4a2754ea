//! runs-service's metrics (OpenTelemetry metrics API; names and units per the
//! GenAI semantic conventions where they define one, `switchboard.*`
//! otherwise). Instruments are made on first use, after telemetry is set up.

use std::{sync::OnceLock, time::Duration};

use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram, UpDownCounter},
};

struct Instruments {
    runs_active: UpDownCounter<i64>,
    runs_finished: Counter<u64>,
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    queries: Counter<u64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = switchboard_telemetry::meter();
        Instruments {
            runs_active: meter
                .i64_up_down_counter("switchboard.runs.active")
                .with_unit("{run}")
                .with_description("Runs in progress")
                .build(),
            runs_finished: meter
                .u64_counter("switchboard.runs.finished")
                .with_unit("{run}")
                .with_description("Runs ended, by final status")
                .build(),
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used per model call, by token type")
                .with_boundaries(vec![
                    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0,
                    1048576.0,
                ])
                .build(),
            operation_duration: switchboard_telemetry::duration_histogram(
                "gen_ai.client.operation.duration",
                "Duration of model calls, until the last event of the answer",
            ),
            queries: meter
                .u64_counter("switchboard.datasource.queries")
                .with_unit("{query}")
                .with_description(
                    "Data-source queries, by outcome (ok, refused, failed, timeout, error)",
                )
                .build(),
        }
    })
}

/// A run began.
pub fn run_started() {
    instruments().runs_active.add(1, &[]);
}

/// A run ended with `status`.
pub fn run_finished(status: &'static str) {
    let instruments = instruments();
    instruments.runs_active.add(-1, &[]);
    instruments
        .runs_finished
        .add(1, &[KeyValue::new("switchboard.run.status", status)]);
}

/// One model call: its provider and model, duration, tokens, and failure.
pub fn model_call(
    provider: &str,
    model: &str,
    elapsed: Duration,
    tokens: Option<(u64, u64)>,
    error_type: Option<&'static str>,
) {
    let instruments = instruments();
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider.to_owned()),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
    ];
    if let Some((input, output)) = tokens {
        for (kind, count) in [("input", input), ("output", output)] {
            let mut with_type = attributes.clone();
            with_type.push(KeyValue::new("gen_ai.token.type", kind));
            instruments.token_usage.record(count, &with_type);
        }
    }
    if let Some(error_type) = error_type {
        attributes.push(KeyValue::new("error.type", error_type));
    }
    instruments
        .operation_duration
        .record(elapsed.as_secs_f64(), &attributes);
}

/// A data-source query ended with `outcome` (`refused` for a statement the
/// gate or the slots refused).
pub fn datasource_query(outcome: &'static str) {
    instruments().queries.add(
        1,
        &[KeyValue::new("switchboard.datasource.outcome", outcome)],
    );
}
