//! A model's stream, once its headers are out, is bounded in idle time,
//! total time, answer size and event size; at a limit the run fails with a
//! reason that names it. Each test runs both wire APIs.

use std::time::Duration;

use switchboard_proto::runs::v1 as runs;
use switchboard_runs_service::Config;
use switchboard_scripted_model::{Hostile, Turn};
use switchboard_test_support::{DbKind, db_tests};

use super::{PROVIDERS, bench, completed, failure};

/// Runs one user message against a model answering `turn` with `tune`d
/// limits, and checks that the run failed naming `limit`, both in the
/// stream's last event and in GetRun.
async fn fails_naming(kind: DbKind, turn: Turn, tune: fn(&mut Config), limit: &str) {
    for provider in PROVIDERS {
        let mut bench = bench(kind, provider, vec![turn.clone()], tune).await;
        let events = bench.say("go on forever").await;
        let (run, error) = failure(&events);
        assert!(error.contains(limit), "{provider}: {error}");
        let stored = bench.get_run(&run.id).await;
        assert_eq!(stored.status, runs::RunStatus::Failed as i32, "{provider}");
        assert!(stored.error.contains(limit), "{provider}: {}", stored.error);
        bench.stop().await;
    }
}

async fn an_endless_text_stream_fails_the_run_at_the_response_size_limit(kind: DbKind) {
    fails_naming(
        kind,
        Turn::Hostile(Hostile::EndlessText("the song that never ends ".into())),
        |config| config.model_limits.model_max_response_bytes = 64 * 1024,
        "larger than 65536 bytes (the model response size limit)",
    )
    .await;
}

async fn endless_tool_arguments_fail_the_run_at_the_response_size_limit(kind: DbKind) {
    fails_naming(
        kind,
        Turn::Hostile(Hostile::EndlessToolArguments("{\"a\":1".into())),
        |config| config.model_limits.model_max_response_bytes = 64 * 1024,
        "the model response size limit",
    )
    .await;
}

async fn a_stream_stalled_after_its_headers_fails_the_run_at_the_idle_timeout(kind: DbKind) {
    fails_naming(
        kind,
        Turn::Hostile(Hostile::Stall("I will get back to you".into())),
        |config| config.model_limits.model_idle_timeout = Duration::from_millis(300),
        "nothing for 300ms (the model stream idle timeout)",
    )
    .await;
}

async fn a_trickling_endless_stream_fails_the_run_at_the_call_time_limit(kind: DbKind) {
    fails_naming(
        kind,
        Turn::Hostile(Hostile::Trickle("tick ".into(), Duration::from_millis(20))),
        |config| config.model_limits.model_call_timeout = Duration::from_secs(1),
        "took longer than 1s (the model call time limit)",
    )
    .await;
}

async fn one_huge_stream_event_fails_the_run_at_the_event_size_limit(kind: DbKind) {
    // Under the response size limit: only the event's size is at fault.
    fails_naming(
        kind,
        Turn::Hostile(Hostile::HugeChunk(1 << 20)),
        |config| config.model_limits.model_max_event_bytes = 64 * 1024,
        "larger than 65536 bytes (the model stream event size limit)",
    )
    .await;
}

async fn every_model_request_carries_the_output_token_limit(kind: DbKind) {
    for provider in PROVIDERS {
        let mut bench = bench(kind, provider, vec![Turn::Text("short".into())], |config| {
            config.model_limits.model_max_output_tokens = 777;
        })
        .await;
        completed(&bench.say("hello").await);
        let requests = bench.model.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0]["max_tokens"], 777, "{provider}");
        bench.stop().await;
    }
}

db_tests!(
    an_endless_text_stream_fails_the_run_at_the_response_size_limit,
    endless_tool_arguments_fail_the_run_at_the_response_size_limit,
    a_stream_stalled_after_its_headers_fails_the_run_at_the_idle_timeout,
    a_trickling_endless_stream_fails_the_run_at_the_call_time_limit,
    one_huge_stream_event_fails_the_run_at_the_event_size_limit,
    every_model_request_carries_the_output_token_limit,
);
