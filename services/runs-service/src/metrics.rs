//! runs-service's metrics (OpenTelemetry metrics API; names and units per the
//! GenAI semantic conventions where they define one, `switchboard.*`
//! otherwise). Instruments are made on first use, after telemetry is set up.
//!
//! Every label value is one of a set fixed by the code or the operator: a
//! provider is named only if it is configured, a model only if the operator
//! listed it (`SWITCHBOARD_METRICS_MODELS`); anything else is `_other`. An
//! agent's model is text its organization's admin chose, up to a whole
//! message.

use std::{
    collections::HashSet,
    sync::{OnceLock, RwLock},
    time::Duration,
};

use switchboard_telemetry::OTHER;

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
    soft_budget_passed: Counter<u64>,
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
                .with_boundaries(switchboard_telemetry::TOKEN_BUCKETS.to_vec())
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
            soft_budget_passed: meter
                .u64_counter("switchboard.budget.soft_passed")
                .with_unit("{run}")
                .with_description(
                    "Runs started by an organization past its soft monthly token budget, \
                     by organization (named in the budgets file, `_other` otherwise)",
                )
                .build(),
        }
    })
}

/// A run started past its organization's soft monthly budget; `org` is its
/// label value only when the operator named it in the budgets file.
pub fn soft_budget_passed(org: &str, named: bool) {
    let org = if named { org } else { OTHER };
    instruments()
        .soft_budget_passed
        .add(1, &[KeyValue::new("switchboard.org.id", org.to_owned())]);
}

/// The providers and models that may be label values.
#[derive(Debug, Default)]
struct Named {
    providers: HashSet<String>,
    models: HashSet<String>,
}

fn named() -> &'static RwLock<Named> {
    static NAMED: OnceLock<RwLock<Named>> = OnceLock::new();
    NAMED.get_or_init(RwLock::default)
}

/// Names `providers` (the configured ones) and `models` (the operator's
/// list) in metrics from now on; any other is `_other`.
pub fn name_only<'a>(providers: &[String], models: impl Iterator<Item = &'a str>) {
    if let Ok(mut named) = named().write() {
        named.providers = providers.iter().cloned().collect();
        named.models = models
            .map(str::trim)
            .filter(|model| !model.is_empty())
            .map(str::to_owned)
            .collect();
    }
}

/// The provider's and the model's label values.
fn labels_of(provider: &str, model: &str) -> (String, String) {
    let pick = |set: &HashSet<String>, value: &str| {
        set.get(value).cloned().unwrap_or_else(|| OTHER.to_owned())
    };
    match named().read() {
        Ok(named) => (pick(&named.providers, provider), pick(&named.models, model)),
        Err(_) => (OTHER.to_owned(), OTHER.to_owned()),
    }
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
    let (provider, model) = labels_of(provider, model);
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider),
        KeyValue::new("gen_ai.request.model", model),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_configured_providers_and_listed_models_are_label_values() {
        name_only(&["scripted".to_owned()], " gpt-x , ,claude-y".split(','));
        assert_eq!(
            labels_of("scripted", "gpt-x"),
            ("scripted".to_owned(), "gpt-x".to_owned())
        );
        assert_eq!(labels_of("scripted", "claude-y").1, "claude-y");
        let huge = "m".repeat(1 << 20);
        assert_eq!(
            labels_of("gone", &huge),
            (OTHER.to_owned(), OTHER.to_owned())
        );
        assert_eq!(labels_of("scripted", "").1, OTHER);
    }
}
