//! Wire-format tests of the scripted model server, with plain HTTP calls.

mod hostile;
mod schemas;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_scripted_model::{
    Looping, Plan, PlanStep, ScriptOptions, ScriptedModel, ScriptedToolCall, Turn,
};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .build()
        .expect("the client needs no configuration that can fail")
}

/// Host part of the server, for the Anthropic path.
fn root(model: &ScriptedModel) -> String {
    format!("http://{}", model.addr())
}

async fn post(url: &str, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .header("authorization", "Bearer test-key")
        .json(body)
        .send()
        .await
        .expect("the scripted model answers")
}

/// Splits an event stream into `(event name, data)` pairs.
async fn events(response: reqwest::Response) -> Vec<(String, String)> {
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "streamed replies are server-sent events"
    );
    let text = response.text().await.expect("the stream completes");
    text.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| {
            let mut name = String::new();
            let mut data = String::new();
            for line in event.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = value.trim().to_owned();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            (name, data)
        })
        .collect()
}

fn json_of(data: &str) -> Value {
    serde_json::from_str(data).expect("every data line but [DONE] is json")
}

fn openai_request(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "stream": stream,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

fn anthropic_request(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

fn two_calls() -> Turn {
    Turn::ToolCalls(vec![
        ScriptedToolCall::new("call_a", "search", r#"{"query":"rust streams"}"#),
        ScriptedToolCall::new("call_b", "fetch", r#"{"url":"http://example.test/a"}"#),
    ])
}

#[tokio::test]
async fn openai_non_streaming_text_is_one_completion_with_usage() {
    let model = ScriptedModel::start(vec![Turn::Text("hello there".into())])
        .await
        .expect("starts");
    let response = post(
        &format!("{}/chat/completions", model.base_url()),
        &openai_request(false),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json body");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["message"]["content"], "hello there");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["usage"]["prompt_tokens"], 10);
    assert_eq!(body["usage"]["completion_tokens"], 5);
    model.shutdown().await;
}

#[tokio::test]
async fn openai_streamed_text_comes_in_chunks_then_usage_then_done() {
    let text = "The quick brown fox jumps over the lazy dog";
    let model = ScriptedModel::start_with(
        vec![Turn::Text(text.into())],
        ScriptOptions {
            usage: (42, 7),
            chunk_size: 5,
        },
    )
    .await
    .expect("starts");
    let mut request = openai_request(true);
    request["stream_options"] = json!({"include_usage": true});
    let events =
        events(post(&format!("{}/chat/completions", model.base_url()), &request).await).await;

    let (last, chunks) = events.split_last().expect("events");
    assert_eq!(last.1, "[DONE]");
    let chunks: Vec<Value> = chunks.iter().map(|(_, data)| json_of(data)).collect();
    let contents: Vec<&str> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/content")?.as_str())
        .filter(|content| !content.is_empty())
        .collect();
    assert_eq!(contents.len(), text.len().div_ceil(5));
    assert_eq!(contents.concat(), text);
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["object"] == "chat.completion.chunk")
    );

    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 42);
    assert_eq!(usage["usage"]["completion_tokens"], 7);
    model.shutdown().await;
}

#[tokio::test]
async fn openai_streamed_parallel_tool_calls_split_their_arguments() {
    let model = ScriptedModel::start(vec![two_calls()])
        .await
        .expect("starts");
    let events = events(
        post(
            &format!("{}/chat/completions", model.base_url()),
            &openai_request(true),
        )
        .await,
    )
    .await;
    assert_eq!(events.last().map(|(_, data)| data.as_str()), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, data)| json_of(data))
        .collect();
    assert!(
        chunks.iter().all(|chunk| chunk.get("usage").is_none()),
        "no usage without stream_options.include_usage"
    );

    let mut ids = [String::new(), String::new()];
    let mut names = [String::new(), String::new()];
    let mut arguments = [String::new(), String::new()];
    let mut fragments = [0, 0];
    for call in chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls")?.as_array())
        .flatten()
    {
        let index = usize::try_from(call["index"].as_u64().expect("index")).expect("small");
        if let Some(id) = call["id"].as_str() {
            ids[index] = id.to_owned();
            assert_eq!(call["type"], "function");
        }
        if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
            names[index].push_str(name);
        }
        let piece = call["function"]["arguments"].as_str().expect("arguments");
        if !piece.is_empty() {
            fragments[index] += 1;
        }
        arguments[index].push_str(piece);
    }
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(names, ["search", "fetch"]);
    assert_eq!(arguments[0], r#"{"query":"rust streams"}"#);
    assert_eq!(arguments[1], r#"{"url":"http://example.test/a"}"#);
    assert!(fragments.iter().all(|count| *count >= 2), "{fragments:?}");
    assert_eq!(
        chunks.last().expect("chunks")["choices"][0]["finish_reason"],
        "tool_calls"
    );
    model.shutdown().await;
}

#[tokio::test]
async fn openai_non_streaming_tool_calls_keep_raw_arguments() {
    let model = ScriptedModel::start(vec![Turn::ToolCalls(vec![ScriptedToolCall::new(
        "call_1",
        "broken",
        "{not json",
    )])])
    .await
    .expect("starts");
    let body: Value = post(
        &format!("{}/chat/completions", model.base_url()),
        &openai_request(false),
    )
    .await
    .json()
    .await
    .expect("json body");
    let message = &body["choices"][0]["message"];
    assert_eq!(message["content"], Value::Null);
    assert_eq!(message["tool_calls"][0]["id"], "call_1");
    assert_eq!(message["tool_calls"][0]["type"], "function");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "broken");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        "{not json"
    );
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    model.shutdown().await;
}

#[tokio::test]
async fn anthropic_streamed_text_follows_the_event_sequence() {
    let model = ScriptedModel::start_with(
        vec![Turn::Text("hello from claude".into())],
        ScriptOptions {
            usage: (30, 4),
            chunk_size: 4,
        },
    )
    .await
    .expect("starts");
    let events = events(
        post(
            &format!("{}/v1/messages", root(&model)),
            &anthropic_request(true),
        )
        .await,
    )
    .await;
    let names: Vec<&str> = events
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| *name != "ping")
        .collect();
    let deltas = "hello from claude".len().div_ceil(4);
    let mut expected = vec!["message_start", "content_block_start"];
    expected.extend(std::iter::repeat_n("content_block_delta", deltas));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);

    let data: Vec<Value> = events.iter().map(|(_, data)| json_of(data)).collect();
    for ((name, _), data) in events.iter().zip(&data) {
        assert_eq!(&data["type"], name.as_str(), "event name matches data type");
    }
    assert_eq!(data[0]["message"]["usage"]["input_tokens"], 30);
    let text: String = data
        .iter()
        .filter(|event| event["type"] == "content_block_delta")
        .map(|event| {
            assert_eq!(event["delta"]["type"], "text_delta");
            event["delta"]["text"].as_str().expect("text")
        })
        .collect();
    assert_eq!(text, "hello from claude");
    let message_delta = &data[data.len() - 2];
    assert_eq!(message_delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(message_delta["usage"]["output_tokens"], 4);
    model.shutdown().await;
}

#[tokio::test]
async fn anthropic_streamed_tool_use_splits_partial_json() {
    let model = ScriptedModel::start(vec![two_calls()])
        .await
        .expect("starts");
    let events = events(
        post(
            &format!("{}/v1/messages", root(&model)),
            &anthropic_request(true),
        )
        .await,
    )
    .await;
    let data: Vec<Value> = events.iter().map(|(_, data)| json_of(data)).collect();

    let starts: Vec<&Value> = data
        .iter()
        .filter(|event| event["type"] == "content_block_start")
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(
        starts[0]["content_block"],
        json!({"type": "tool_use", "id": "call_a", "name": "search", "input": {}})
    );
    assert_eq!(starts[1]["index"], 1);
    assert_eq!(starts[1]["content_block"]["name"], "fetch");

    for (index, expected) in [
        r#"{"query":"rust streams"}"#,
        r#"{"url":"http://example.test/a"}"#,
    ]
    .iter()
    .enumerate()
    {
        let pieces: Vec<&str> = data
            .iter()
            .filter(|event| event["type"] == "content_block_delta" && event["index"] == index)
            .map(|event| {
                assert_eq!(event["delta"]["type"], "input_json_delta");
                event["delta"]["partial_json"]
                    .as_str()
                    .expect("partial json")
            })
            .collect();
        assert!(pieces.len() >= 2, "{pieces:?}");
        assert_eq!(pieces.concat(), *expected);
    }
    let message_delta = data
        .iter()
        .find(|event| event["type"] == "message_delta")
        .expect("message_delta");
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    model.shutdown().await;
}

#[tokio::test]
async fn anthropic_non_streaming_reply_is_one_message() {
    let model = ScriptedModel::start(vec![
        Turn::Text("plain".into()),
        Turn::ToolCalls(vec![ScriptedToolCall::new("toolu_1", "echo", r#"{"x":1}"#)]),
    ])
    .await
    .expect("starts");
    let url = format!("{}/v1/messages", root(&model));

    let text: Value = post(&url, &anthropic_request(false))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(text["type"], "message");
    assert_eq!(text["content"], json!([{"type": "text", "text": "plain"}]));
    assert_eq!(text["stop_reason"], "end_turn");
    assert_eq!(
        text["usage"],
        json!({"input_tokens": 10, "output_tokens": 5})
    );

    let tool: Value = post(&url, &anthropic_request(false))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        tool["content"],
        json!([{"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"x": 1}}])
    );
    assert_eq!(tool["stop_reason"], "tool_use");
    model.shutdown().await;
}

#[tokio::test]
async fn error_turns_set_status_body_and_retry_after() {
    let model = ScriptedModel::start(vec![
        Turn::Error {
            status: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
            retry_after: Some(1),
        },
        Turn::Error {
            status: 503,
            body: "overloaded".into(),
            retry_after: None,
        },
    ])
    .await
    .expect("starts");
    let url = format!("{}/chat/completions", model.base_url());

    let limited = post(&url, &openai_request(true)).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "1");
    assert_eq!(limited.headers()["content-type"], "application/json");
    assert_eq!(
        limited.text().await.expect("body"),
        r#"{"error":{"message":"slow down"}}"#
    );

    let unavailable = post(
        &format!("{}/v1/messages", root(&model)),
        &anthropic_request(true),
    )
    .await;
    assert_eq!(unavailable.status(), 503);
    assert!(unavailable.headers().get("retry-after").is_none());
    assert_eq!(unavailable.text().await.expect("body"), "overloaded");
    model.shutdown().await;
}

#[tokio::test]
async fn from_tool_results_fills_the_template_in_both_apis() {
    let template = "last={last_tool_result}; all={tool_results}";
    let model = ScriptedModel::start(vec![
        Turn::FromToolResults(template.into()),
        Turn::FromToolResults(template.into()),
    ])
    .await
    .expect("starts");

    let openai = json!({
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "first"},
            {"role": "tool", "tool_call_id": "b", "content": "second"}
        ]
    });
    let body: Value = post(&format!("{}/chat/completions", model.base_url()), &openai)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "last=second; all=first\nsecond"
    );

    let anthropic = json!({
        "model": "m",
        "max_tokens": 10,
        "stream": true,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "only"}]}
            ]}
        ]
    });
    let events = events(post(&format!("{}/v1/messages", root(&model)), &anthropic).await).await;
    let text: String = events
        .iter()
        .map(|(_, data)| json_of(data))
        .filter(|event| event["type"] == "content_block_delta")
        .filter_map(|event| event["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "last=only; all=only");
    model.shutdown().await;
}

#[tokio::test]
async fn requests_and_headers_are_recorded_in_order_and_the_script_runs_out() {
    let model = ScriptedModel::start(vec![Turn::Text("one".into())])
        .await
        .expect("starts");
    let first = openai_request(false);
    let second = anthropic_request(false);
    let _ = post(&format!("{}/chat/completions", model.base_url()), &first).await;
    let exhausted: Value = client()
        .post(format!("{}/v1/messages", root(&model)))
        .header("x-api-key", "anthropic-key")
        .json(&second)
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(exhausted["content"][0]["text"], "script exhausted");

    assert_eq!(model.requests(), vec![first, second]);
    let headers = model.request_headers();
    assert_eq!(headers.len(), 2);
    assert_eq!(headers[0]["authorization"], "Bearer test-key");
    assert_eq!(headers[1]["x-api-key"], "anthropic-key");
    model.shutdown().await;
}

#[tokio::test]
async fn looping_calls_the_offered_tool_then_reports_its_result() {
    let model = ScriptedModel::start_looping(Looping::new(
        Some("echo".into()),
        r#"{"text":"hi"}"#,
        "no tools",
    ))
    .await
    .expect("starts");
    let url = format!("{}/chat/completions", model.base_url());

    let plain: Value = post(&url, &openai_request(false))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(plain["choices"][0]["message"]["content"], "no tools");

    let mut offered = openai_request(false);
    offered["tools"] =
        json!([{"type": "function", "function": {"name": "echo", "parameters": {}}}]);
    let call: Value = post(&url, &offered).await.json().await.expect("json");
    let tool_call = &call["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(tool_call["function"]["name"], "echo");
    assert_eq!(tool_call["function"]["arguments"], r#"{"text":"hi"}"#);

    offered["messages"] = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": tool_call["id"], "content": "echoed hi"}
    ]);
    let done: Value = post(&url, &offered).await.json().await.expect("json");
    assert_eq!(done["choices"][0]["message"]["content"], "done: echoed hi");
    model.shutdown().await;
}

#[tokio::test]
async fn looping_with_rounds_calls_the_tool_that_many_times_per_user_message() {
    let model =
        ScriptedModel::start_looping(Looping::new(Some("echo".into()), "{}", "hi").rounds(2))
            .await
            .expect("starts");
    let url = format!("{}/chat/completions", model.base_url());
    let call =
        json!({"id": "c", "type": "function", "function": {"name": "echo", "arguments": "{}"}});
    let mut request = openai_request(false);
    request["tools"] =
        json!([{"type": "function", "function": {"name": "echo", "parameters": {}}}]);
    let mut turn = |messages: Value| {
        request["messages"] = messages;
        let request = request.clone();
        let url = url.clone();
        async move {
            let reply: Value = post(&url, &request).await.json().await.expect("json");
            reply["choices"][0]["message"].clone()
        }
    };
    let user = json!({"role": "user", "content": "go"});
    let assistant = json!({"role": "assistant", "content": null, "tool_calls": [call]});
    let result = json!({"role": "tool", "tool_call_id": "c", "content": "r"});

    let first = turn(json!([user])).await;
    assert_eq!(first["tool_calls"][0]["function"]["name"], "echo");
    let second = turn(json!([user, assistant, result])).await;
    assert_eq!(second["tool_calls"][0]["function"]["name"], "echo");
    let done = turn(json!([user, assistant, result, assistant, result])).await;
    assert_eq!(done["content"], "done: r");
    // A new user message starts counting again.
    let again = turn(json!([user, assistant, result, assistant, result, {"role": "assistant", "content": "done: r"}, user])).await;
    assert_eq!(again["tool_calls"][0]["function"]["name"], "echo");
    model.shutdown().await;
}

#[tokio::test]
async fn delay_waits_and_shutdown_cuts_it_short() {
    let model = ScriptedModel::start(vec![
        Turn::Delay(
            Duration::from_millis(300),
            Box::new(Turn::Text("late".into())),
        ),
        Turn::Delay(
            Duration::from_secs(60),
            Box::new(Turn::Text("never".into())),
        ),
    ])
    .await
    .expect("starts");
    let url = format!("{}/chat/completions", model.base_url());

    let started = Instant::now();
    let late: Value = post(&url, &openai_request(false))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(late["choices"][0]["message"]["content"], "late");
    assert!(started.elapsed() >= Duration::from_millis(300));

    let pending = tokio::spawn({
        let url = url.clone();
        async move { client().post(url).json(&openai_request(false)).send().await }
    });
    while model.requests().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    model.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let cut = pending.await.expect("joins");
    assert!(cut.is_err() || cut.is_ok_and(|response| response.status() == 503));
}

#[tokio::test]
async fn a_plan_calls_its_steps_in_order_after_each_user_message_then_answers() {
    let plan = Plan {
        steps: vec![
            PlanStep::new("list", "{}"),
            PlanStep::new("query", r#"{"sql":"SELECT 1"}"#),
        ],
        answer: "first {result:1}, then {result:2}".into(),
    };
    let model = ScriptedModel::start_plan_on("127.0.0.1:0".parse().expect("an address"), plan)
        .await
        .expect("starts");
    let url = format!("{}/chat/completions", model.base_url());
    let ask = |messages: Value| {
        let mut request = openai_request(false);
        request["messages"] = messages;
        let url = url.clone();
        async move {
            let reply: Value = post(&url, &request).await.json().await.expect("json");
            reply["choices"][0]["message"].clone()
        }
    };
    let user = |text: &str| json!({"role": "user", "content": text});
    let call = |id: &str| {
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "x", "arguments": "{}"}}
        ]})
    };
    let result =
        |id: &str, text: &str| json!({"role": "tool", "tool_call_id": id, "content": text});

    // Steps are called whether or not the request offers them.
    let first = ask(json!([user("go")])).await;
    assert_eq!(first["tool_calls"][0]["function"]["name"], "list");
    let second = ask(json!([user("go"), call("a"), result("a", "two tables")])).await;
    assert_eq!(second["tool_calls"][0]["function"]["name"], "query");
    assert_eq!(
        second["tool_calls"][0]["function"]["arguments"],
        r#"{"sql":"SELECT 1"}"#
    );
    let answer = ask(json!([
        user("go"),
        call("a"),
        result("a", "two tables"),
        call("b"),
        result("b", "1 row")
    ]))
    .await;
    assert_eq!(answer["content"], "first two tables, then 1 row");

    // A new user message starts the plan again.
    let again = ask(json!([
        user("go"),
        call("a"),
        result("a", "two tables"),
        call("b"),
        result("b", "1 row"),
        {"role": "assistant", "content": "first two tables, then 1 row"},
        user("once more")
    ]))
    .await;
    assert_eq!(again["tool_calls"][0]["function"]["name"], "list");
}
