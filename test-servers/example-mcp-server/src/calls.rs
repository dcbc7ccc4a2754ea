//! The tools that need nothing of the session: their arguments, their
//! results, and the call log that outlives the process.

use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, ContentBlock, JsonObject, ResourceContents},
};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{
    Stats,
    catalog::sales_resource,
    data::{self, EMBEDDED_TEXT, EMBEDDED_URI},
};

/// Largest payload the `big` tool produces, so a caller cannot make the server
/// allocate without bound.
pub const MAX_BIG_BYTES: usize = 64 * 1024 * 1024;

/// Environment variable naming a file each tool call is appended to (its
/// tool name, one line): a record that outlives the process, for tests of
/// stdio servers that die mid-call.
pub const CALL_LOG_ENV: &str = "SWITCHBOARD_EXAMPLE_CALL_LOG";

pub(crate) fn log_call(name: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os(CALL_LOG_ENV) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| writeln!(file, "{name}"));
    if let Err(error) = appended {
        tracing::warn!(%error, "failed to log the tool call");
    }
}

#[derive(Deserialize)]
struct TextArgs {
    text: String,
}

#[derive(Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
struct FailArgs {
    message: String,
}

#[derive(Deserialize)]
pub(crate) struct SleepArgs {
    pub(crate) ms: u64,
}

#[derive(Deserialize)]
struct BigArgs {
    bytes: usize,
}

pub(crate) fn parse_args<T: DeserializeOwned>(
    arguments: Option<JsonObject>,
) -> Result<T, McpError> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
        .map_err(|error| McpError::invalid_params(format!("invalid arguments: {error}"), None))
}

pub(crate) fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// `echo`: the given text.
pub(crate) fn echo(arguments: Option<JsonObject>) -> Result<CallToolResult, McpError> {
    let TextArgs { text } = parse_args(arguments)?;
    Ok(text_result(text))
}

/// `add`: the sum as text and as structured content.
pub(crate) fn add(arguments: Option<JsonObject>) -> Result<CallToolResult, McpError> {
    let AddArgs { a, b } = parse_args(arguments)?;
    let sum = a + b;
    let mut result = text_result(sum.to_string());
    result.structured_content = Some(json!({ "sum": sum }));
    Ok(result)
}

/// `fail`: a tool error carrying the given message.
pub(crate) fn fail(arguments: Option<JsonObject>) -> Result<CallToolResult, McpError> {
    let FailArgs { message } = parse_args(arguments)?;
    Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
}

/// `big`: one text block of exactly the given size, up to [`MAX_BIG_BYTES`].
pub(crate) fn big(arguments: Option<JsonObject>) -> Result<CallToolResult, McpError> {
    let BigArgs { bytes } = parse_args(arguments)?;
    if bytes > MAX_BIG_BYTES {
        return Err(McpError::invalid_params(
            format!("bytes must be at most {MAX_BIG_BYTES}"),
            None,
        ));
    }
    Ok(text_result("x".repeat(bytes)))
}

/// `mixed`: one content block of each kind.
pub(crate) fn mixed() -> CallToolResult {
    CallToolResult::success(vec![
        ContentBlock::text("mixed content"),
        ContentBlock::image(data::base64(data::PNG_BYTES), "image/png"),
        ContentBlock::audio(data::base64(data::WAV_BYTES), "audio/wav"),
        ContentBlock::resource(ResourceContents::text(EMBEDDED_TEXT, EMBEDDED_URI)),
        ContentBlock::resource_link(sales_resource()),
    ])
}

/// `record`: the arguments exactly as received, as structured content only.
pub(crate) fn record(arguments: Option<JsonObject>) -> CallToolResult {
    let mut result = CallToolResult::success(Vec::new());
    result.structured_content = Some(json!({ "received": arguments }));
    result
}

/// `sleep`: answers after `ms` milliseconds, or, when the client cancels
/// first, counts the cancellation in `stats`.
pub(crate) async fn sleep(stats: &Stats, ms: u64, ct: CancellationToken) -> CallToolResult {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => {
            CallToolResult::success(vec![ContentBlock::text(format!("slept {ms}ms"))])
        }
        () = ct.cancelled() => {
            stats.record_cancellation();
            tracing::debug!(ms, "sleep cancelled by the client");
            // The client has abandoned the request, so this result is
            // normally dropped; it still says what happened.
            CallToolResult::error(vec![ContentBlock::text("cancelled")])
        }
    }
}

/// A catalog tool ([`crate::ExampleServer::with_catalog`]): the text its
/// `_meta.answer` holds, when it has one (a hostile server's answer, for
/// tests), else its name and the arguments it was given.
pub(crate) fn catalog(tool: &rmcp::model::Tool, arguments: Option<JsonObject>) -> CallToolResult {
    let answer = tool
        .meta
        .as_ref()
        .and_then(|meta| meta.get("answer"))
        .and_then(Value::as_str);
    let text = match answer {
        Some(answer) => answer.to_owned(),
        None => format!(
            "{} called with {}",
            tool.name,
            Value::Object(arguments.unwrap_or_default())
        ),
    };
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// `process`: the process id and the names of its environment variables.
pub(crate) fn process() -> Result<CallToolResult, McpError> {
    let mut env: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    env.sort();
    Ok(CallToolResult::success(vec![ContentBlock::json(json!({
        "pid": std::process::id(),
        "env": env,
    }))?]))
}
