//! Hostile turns: streams that never end, stall, or carry one huge event.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;
use switchboard_scripted_model::{Hostile, ScriptedModel, Turn};

use super::{anthropic_request, client, openai_request, root};

/// Reads at least `at_least` bytes of the reply body, then drops it.
async fn read_at_least(url: &str, body: &Value, at_least: usize) -> String {
    let response = client()
        .post(url)
        .json(body)
        .send()
        .await
        .expect("the scripted model answers");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = response.bytes_stream();
    let mut seen = Vec::new();
    while seen.len() < at_least {
        let chunk = stream
            .next()
            .await
            .expect("the stream goes on")
            .expect("no transport error");
        seen.extend_from_slice(&chunk);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn endless_text_goes_on_past_a_megabyte_in_both_apis() {
    let piece = "never ending ";
    let model = ScriptedModel::start(vec![
        Turn::Hostile(Hostile::EndlessText(piece.into())),
        Turn::Hostile(Hostile::EndlessText(piece.into())),
    ])
    .await
    .expect("starts");
    let openai = read_at_least(
        &format!("{}/chat/completions", model.base_url()),
        &openai_request(true),
        1 << 20,
    )
    .await;
    assert!(openai.matches(piece).count() > 1000);
    assert!(!openai.contains("[DONE]"));
    let anthropic = read_at_least(
        &format!("{}/v1/messages", root(&model)),
        &anthropic_request(true),
        1 << 20,
    )
    .await;
    assert!(anthropic.matches("text_delta").count() > 1000);
    assert!(!anthropic.contains("message_stop"));
    model.shutdown().await;
}

#[tokio::test]
async fn endless_tool_arguments_repeat_the_argument_piece() {
    let model = ScriptedModel::start(vec![Turn::Hostile(Hostile::EndlessToolArguments(
        "aaaa".into(),
    ))])
    .await
    .expect("starts");
    let seen = read_at_least(
        &format!("{}/chat/completions", model.base_url()),
        &openai_request(true),
        256 << 10,
    )
    .await;
    assert!(seen.contains(r#""name":"endless""#), "{}", &seen[..400]);
    assert!(seen.matches(r#""arguments":"aaaa""#).count() > 100);
    model.shutdown().await;
}

#[tokio::test]
async fn a_stalled_stream_sends_its_text_then_nothing_until_shutdown() {
    let model = ScriptedModel::start(vec![Turn::Hostile(Hostile::Stall("first words".into()))])
        .await
        .expect("starts");
    let response = client()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&openai_request(true))
        .send()
        .await
        .expect("headers arrive");
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("first words") {
        let chunk = stream.next().await.expect("more").expect("no error");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let silent = tokio::time::timeout(Duration::from_millis(500), stream.next()).await;
    assert!(silent.is_err(), "nothing more arrives: {silent:?}");
    model.shutdown().await;
    let after = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the shutdown ends the stream");
    assert!(after.is_none() || after.is_some_and(|item| item.is_err()));
}

#[tokio::test]
async fn a_huge_chunk_is_one_event_then_the_stream_ends() {
    let size = 3 << 20;
    let model = ScriptedModel::start(vec![Turn::Hostile(Hostile::HugeChunk(size))])
        .await
        .expect("starts");
    let events = super::events(
        super::post(
            &format!("{}/v1/messages", root(&model)),
            &anthropic_request(true),
        )
        .await,
    )
    .await;
    let delta = events
        .iter()
        .find(|(name, _)| name == "content_block_delta")
        .expect("one delta");
    let data: Value = serde_json::from_str(&delta.1).expect("json");
    assert_eq!(data["delta"]["text"].as_str().map(str::len), Some(size));
    assert_eq!(
        events.last().map(|(name, _)| name.as_str()),
        Some("message_stop")
    );
    model.shutdown().await;
}
